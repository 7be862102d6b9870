"""Process plumbing shared by the programs: supervision, logging, HTTP health/metrics, atomic
files.
"""
