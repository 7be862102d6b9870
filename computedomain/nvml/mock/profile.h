/*
 * A hardware profile: what the mock NVML library answers, read from a profile document.
 *
 * The document format is the fake backend's (the JSON files in computedomain/nvml/profiles, described in
 * docs/nvml-mock.md); this reader validates every field the same way and names the field and the
 * reason when it refuses one.
 */
#ifndef NVML_MOCK_PROFILE_H
#define NVML_MOCK_PROFILE_H

#include <stddef.h>

#define MOCK_MAX_GPUS 64
#define MOCK_VERSION_SIZE 80 /* NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE */
#define MOCK_NAME_SIZE 96    /* NVML_DEVICE_NAME_V2_BUFFER_SIZE */
#define MOCK_UUID_SIZE 96    /* NVML_DEVICE_UUID_V2_BUFFER_SIZE */
#define MOCK_BUS_ID_SIZE 32  /* NVML_DEVICE_PCI_BUS_ID_BUFFER_SIZE */

struct mock_fabric {
    unsigned int result; /* nvmlReturn_t of the fabric-info calls */
    unsigned char cluster_uuid[16];
    unsigned int clique_id;
    unsigned char state;
    unsigned int status;
    unsigned int health_mask;
    unsigned char health_summary;
};

struct mock_gpu {
    char name[MOCK_NAME_SIZE];
    char uuid[MOCK_UUID_SIZE];
    char bus_id[MOCK_BUS_ID_SIZE];        /* "%08X:%02X:%02X.%X" */
    char bus_id_legacy[MOCK_BUS_ID_SIZE]; /* "%04X:%02X:%02X.%X" */
    unsigned int domain, bus, device;
    unsigned int pci_device_id, pci_subsystem_id;
    unsigned int architecture;
    int compute_major, compute_minor;
    struct mock_fabric fabric;
};

struct mock_profile {
    unsigned int init_result; /* what nvmlInit* returns; 0 = success */
    char driver_version[MOCK_VERSION_SIZE];
    char nvml_version[MOCK_VERSION_SIZE];
    int cuda_driver_version;
    int fabric_v2, fabric_v3; /* struct versions nvmlDeviceGetGpuFabricInfoV accepts */
    unsigned int gpu_count;
    struct mock_gpu gpus[MOCK_MAX_GPUS];
};

/* Parse a profile document. 0 on success; -1 with a message naming the field otherwise. */
int mock_profile_parse(const char *text, size_t length, struct mock_profile *out, char *error,
                       size_t error_size);

/* Read and parse the profile file at path; -1 with a message otherwise. */
int mock_profile_load(const char *path, struct mock_profile *out, char *error, size_t error_size);

#endif
