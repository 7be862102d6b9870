"""cd-kubelet-plugin: the DRA kubelet plugin (gRPC, ResourceSlice, prepare/unprepare, CDI,
checkpoint).
"""
