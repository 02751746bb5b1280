"""The thin core of samctl, the face the commands call: scope (which stores a command covers), load,
listing, check, recover, export, logview, places, resume.  No click, no printing.

Every function takes a Store (see samctl.stores) and returns model objects
(samctl.model) plus a list of Findings; errors are SamctlError subclasses.
"""
