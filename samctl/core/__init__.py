"""The thin core of samctl: no click, no printing.

Every function takes a Store (see samctl.stores) and returns model objects
(samctl.model) plus a list of Findings; errors are SamctlError subclasses.
"""
