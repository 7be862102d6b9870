"""The embedded Kubernetes API server (aiohttp), faithful where our components and kubectl depend
on it.
"""
