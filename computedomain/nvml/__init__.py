"""The narrow NVML interface used by the kubelet plugin: a real backend and a fake one with
profiles.
"""
