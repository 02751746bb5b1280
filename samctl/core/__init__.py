"""The thin core of samctl: no click, no printing.

Every function takes a Store (see samctl.formats) and returns model objects
(samctl.core.model) plus a list of Findings; errors are SamctlError subclasses.
"""
