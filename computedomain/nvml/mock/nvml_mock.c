/*
 * A mock libnvidia-ml.so.1: the NVML calls a ComputeDomain kubelet plugin makes, answered from a
 * hardware profile instead of a GPU.
 *
 * nvmlInit* reads the profile named by NVML_MOCK_PROFILE (a file path; without it, the GB200
 * rack member built into the library) when the reference count goes from 0 to 1, so a process
 * can switch profiles between sessions. Only the calls below are exported (everything else is
 * hidden), so a client that resolves any other symbol gets its own "function not found" answer,
 * as with an older driver. Structs and version macros follow nvml.h; the static assertions pin
 * their sizes. Every call takes one lock: clients may call from several threads.
 */
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "profile.h"

#define NVML_API __attribute__((visibility("default")))

typedef unsigned int nvmlReturn_t;
enum {
    NVML_SUCCESS = 0,
    NVML_ERROR_UNINITIALIZED = 1,
    NVML_ERROR_INVALID_ARGUMENT = 2,
    NVML_ERROR_NOT_FOUND = 6,
    NVML_ERROR_INSUFFICIENT_SIZE = 7,
    NVML_ERROR_FUNCTION_NOT_FOUND = 13,
    NVML_ERROR_ARGUMENT_VERSION_MISMATCH = 25,
    NVML_ERROR_UNKNOWN = 999,
};

#define NVML_STRUCT_VERSION(size, version) ((unsigned int)(size) | ((unsigned int)(version) << 24))

struct nvmlDevice_st {
    unsigned int index;
};
typedef struct nvmlDevice_st *nvmlDevice_t;

typedef struct {
    char busIdLegacy[16];
    unsigned int domain, bus, device, pciDeviceId, pciSubSystemId;
    char busId[32];
} nvmlPciInfo_t; /* the _v3 layout */

typedef struct {
    char busId[16];
    unsigned int domain, bus, device, pciDeviceId, pciSubSystemId;
    unsigned int reserved0, reserved1, reserved2, reserved3;
} nvmlPciInfo_v2_t; /* the layout of nvmlDeviceGetPciInfo and _v2 */

typedef unsigned char nvmlGpuFabricState_t;

typedef struct {
    unsigned char clusterUuid[16];
    nvmlReturn_t status;
    unsigned int cliqueId;
    nvmlGpuFabricState_t state;
} nvmlGpuFabricInfo_t;

typedef struct {
    unsigned int version;
    unsigned char clusterUuid[16];
    nvmlReturn_t status;
    unsigned int cliqueId;
    nvmlGpuFabricState_t state;
    unsigned int healthMask;
} nvmlGpuFabricInfo_v2_t;

typedef struct {
    unsigned int version;
    unsigned char clusterUuid[16];
    nvmlReturn_t status;
    unsigned int cliqueId;
    nvmlGpuFabricState_t state;
    unsigned int healthMask;
    unsigned char healthSummary;
} nvmlGpuFabricInfo_v3_t;

#define nvmlGpuFabricInfo_v2 NVML_STRUCT_VERSION(sizeof(nvmlGpuFabricInfo_v2_t), 2)
#define nvmlGpuFabricInfo_v3 NVML_STRUCT_VERSION(sizeof(nvmlGpuFabricInfo_v3_t), 3)

_Static_assert(sizeof(nvmlPciInfo_t) == 68, "nvmlPciInfo_t layout");
_Static_assert(sizeof(nvmlPciInfo_v2_t) == 52, "nvmlPciInfo_v2_t layout");
_Static_assert(sizeof(nvmlGpuFabricInfo_t) == 28, "nvmlGpuFabricInfo_t layout");
_Static_assert(offsetof(nvmlGpuFabricInfo_v2_t, healthMask) == 32, "healthMask offset");
_Static_assert(nvmlGpuFabricInfo_v2 == 0x02000024, "nvmlGpuFabricInfo_v2");
_Static_assert(offsetof(nvmlGpuFabricInfo_v3_t, healthSummary) == 36, "healthSummary offset");
_Static_assert(nvmlGpuFabricInfo_v3 == 0x03000028, "nvmlGpuFabricInfo_v3");

/* The default profile, the GB200 rack member file, built into the library (see the Makefile). */
__asm__(".pushsection .rodata\n"
        ".hidden nvml_mock_default_profile\n"
        ".globl nvml_mock_default_profile\n"
        "nvml_mock_default_profile:\n"
        ".incbin \"" NVML_MOCK_DEFAULT_PROFILE "\"\n"
        ".byte 0\n"
        ".popsection\n");
extern const char nvml_mock_default_profile[];

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static unsigned int references;
static struct mock_profile *profile;
static struct nvmlDevice_st devices[MOCK_MAX_GPUS];

static nvmlReturn_t load_profile(void) {
    char error[512];
    struct mock_profile *loaded = malloc(sizeof *loaded);
    if (loaded == NULL) {
        fprintf(stderr, "nvml-mock: out of memory\n");
        return NVML_ERROR_UNKNOWN;
    }
    const char *path = getenv("NVML_MOCK_PROFILE");
    int status;
    if (path != NULL && path[0] != '\0') {
        status = mock_profile_load(path, loaded, error, sizeof error);
    } else {
        status = mock_profile_parse(nvml_mock_default_profile, strlen(nvml_mock_default_profile),
                                    loaded, error, sizeof error);
    }
    if (status != 0) {
        if (path != NULL && path[0] != '\0')
            fprintf(stderr, "nvml-mock: profile %s (NVML_MOCK_PROFILE): %s\n", path, error);
        else
            fprintf(stderr, "nvml-mock: the built-in profile: %s\n", error);
        free(loaded);
        return NVML_ERROR_UNKNOWN;
    }
    if (loaded->init_result != NVML_SUCCESS) {
        nvmlReturn_t result = loaded->init_result;
        free(loaded);
        return result;
    }
    for (unsigned int i = 0; i < MOCK_MAX_GPUS; i++) devices[i].index = i;
    profile = loaded;
    return NVML_SUCCESS;
}

NVML_API nvmlReturn_t nvmlInitWithFlags(unsigned int flags) {
    (void)flags; /* the profile decides what there is; no flag changes the answers */
    nvmlReturn_t result = NVML_SUCCESS;
    pthread_mutex_lock(&lock);
    if (references == 0) result = load_profile();
    if (result == NVML_SUCCESS) references++;
    pthread_mutex_unlock(&lock);
    return result;
}

NVML_API nvmlReturn_t nvmlInit_v2(void) { return nvmlInitWithFlags(0); }

NVML_API nvmlReturn_t nvmlInit(void) { return nvmlInitWithFlags(0); }

NVML_API nvmlReturn_t nvmlShutdown(void) {
    nvmlReturn_t result = NVML_SUCCESS;
    pthread_mutex_lock(&lock);
    if (references == 0) {
        result = NVML_ERROR_UNINITIALIZED;
    } else if (--references == 0) {
        free(profile);
        profile = NULL;
    }
    pthread_mutex_unlock(&lock);
    return result;
}

NVML_API const char *nvmlErrorString(nvmlReturn_t result) {
    switch (result) {
    case 0: return "Success";
    case 1: return "Uninitialized";
    case 2: return "Invalid Argument";
    case 3: return "Not Supported";
    case 4: return "Insufficient Permissions";
    case 5: return "Already Initialized";
    case 6: return "Not Found";
    case 7: return "Insufficient Size";
    case 9: return "Driver Not Loaded";
    case 12: return "NVML Shared Library Not Found";
    case 13: return "Function Not Found";
    case 23: return "Insufficient Resources";
    case 25: return "Argument Version Mismatch";
    case 27: return "Not Ready";
    case 999: return "Unknown Error";
    default: return "Unknown Error";
    }
}

/* Copies text into a caller's buffer of size bytes, NVML-style. */
static nvmlReturn_t copy_out(char *buffer, unsigned int size, const char *text) {
    if (buffer == NULL) return NVML_ERROR_INVALID_ARGUMENT;
    size_t length = strlen(text);
    if (length >= size) return NVML_ERROR_INSUFFICIENT_SIZE;
    memcpy(buffer, text, length + 1);
    return NVML_SUCCESS;
}

/* Takes the lock; the loaded profile, or NULL with *result set. Pair with leave(). */
static const struct mock_profile *enter(nvmlReturn_t *result) {
    pthread_mutex_lock(&lock);
    *result = profile == NULL ? NVML_ERROR_UNINITIALIZED : NVML_SUCCESS;
    return profile;
}

/* Takes the lock; the GPU behind a handle, or NULL with *result set. Pair with leave(). */
static const struct mock_gpu *enter_gpu(nvmlDevice_t device, nvmlReturn_t *result) {
    if (enter(result) == NULL) return NULL;
    if (device < devices || device >= devices + MOCK_MAX_GPUS ||
        device->index >= profile->gpu_count) {
        *result = NVML_ERROR_INVALID_ARGUMENT;
        return NULL;
    }
    return &profile->gpus[device->index];
}

static nvmlReturn_t leave(nvmlReturn_t result) {
    pthread_mutex_unlock(&lock);
    return result;
}

NVML_API nvmlReturn_t nvmlSystemGetDriverVersion(char *version, unsigned int length) {
    nvmlReturn_t result;
    const struct mock_profile *p = enter(&result);
    if (p != NULL) result = copy_out(version, length, p->driver_version);
    return leave(result);
}

NVML_API nvmlReturn_t nvmlSystemGetNVMLVersion(char *version, unsigned int length) {
    nvmlReturn_t result;
    const struct mock_profile *p = enter(&result);
    if (p != NULL) result = copy_out(version, length, p->nvml_version);
    return leave(result);
}

NVML_API nvmlReturn_t nvmlSystemGetCudaDriverVersion(int *version) {
    nvmlReturn_t result;
    const struct mock_profile *p = enter(&result);
    if (p != NULL && version == NULL) result = NVML_ERROR_INVALID_ARGUMENT;
    if (result == NVML_SUCCESS) *version = p->cuda_driver_version;
    return leave(result);
}

NVML_API nvmlReturn_t nvmlSystemGetCudaDriverVersion_v2(int *version) {
    return nvmlSystemGetCudaDriverVersion(version);
}

NVML_API nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int *count) {
    nvmlReturn_t result;
    const struct mock_profile *p = enter(&result);
    if (p != NULL && count == NULL) result = NVML_ERROR_INVALID_ARGUMENT;
    if (result == NVML_SUCCESS) *count = p->gpu_count;
    return leave(result);
}

NVML_API nvmlReturn_t nvmlDeviceGetCount(unsigned int *count) {
    return nvmlDeviceGetCount_v2(count);
}

NVML_API nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int index, nvmlDevice_t *device) {
    nvmlReturn_t result;
    const struct mock_profile *p = enter(&result);
    if (p != NULL && (device == NULL || index >= p->gpu_count))
        result = NVML_ERROR_INVALID_ARGUMENT;
    if (result == NVML_SUCCESS) *device = &devices[index];
    return leave(result);
}

NVML_API nvmlReturn_t nvmlDeviceGetHandleByIndex(unsigned int index, nvmlDevice_t *device) {
    return nvmlDeviceGetHandleByIndex_v2(index, device);
}

NVML_API nvmlReturn_t nvmlDeviceGetHandleByUUID(const char *uuid, nvmlDevice_t *device) {
    nvmlReturn_t result;
    const struct mock_profile *p = enter(&result);
    if (p != NULL && (uuid == NULL || device == NULL)) result = NVML_ERROR_INVALID_ARGUMENT;
    if (result == NVML_SUCCESS) {
        result = NVML_ERROR_NOT_FOUND;
        for (unsigned int i = 0; i < p->gpu_count; i++)
            if (strcmp(p->gpus[i].uuid, uuid) == 0) {
                *device = &devices[i];
                result = NVML_SUCCESS;
            }
    }
    return leave(result);
}

NVML_API nvmlReturn_t nvmlDeviceGetHandleByPciBusId_v2(const char *bus_id,
                                                        nvmlDevice_t *device) {
    nvmlReturn_t result;
    const struct mock_profile *p = enter(&result);
    if (p != NULL && (bus_id == NULL || device == NULL)) result = NVML_ERROR_INVALID_ARGUMENT;
    if (result == NVML_SUCCESS) {
        result = NVML_ERROR_NOT_FOUND;
        for (unsigned int i = 0; i < p->gpu_count; i++)
            if (strcasecmp(p->gpus[i].bus_id, bus_id) == 0 ||
                strcasecmp(p->gpus[i].bus_id_legacy, bus_id) == 0) {
                *device = &devices[i];
                result = NVML_SUCCESS;
            }
    }
    return leave(result);
}

NVML_API nvmlReturn_t nvmlDeviceGetHandleByPciBusId(const char *bus_id, nvmlDevice_t *device) {
    return nvmlDeviceGetHandleByPciBusId_v2(bus_id, device);
}

NVML_API nvmlReturn_t nvmlDeviceGetIndex(nvmlDevice_t device, unsigned int *index) {
    nvmlReturn_t result;
    const struct mock_gpu *gpu = enter_gpu(device, &result);
    if (gpu != NULL && index == NULL) result = NVML_ERROR_INVALID_ARGUMENT;
    if (result == NVML_SUCCESS) *index = device->index;
    return leave(result);
}

NVML_API nvmlReturn_t nvmlDeviceGetMinorNumber(nvmlDevice_t device, unsigned int *minor) {
    return nvmlDeviceGetIndex(device, minor); /* /dev/nvidia<N>: N is the index here */
}

NVML_API nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t device, char *name, unsigned int length) {
    nvmlReturn_t result;
    const struct mock_gpu *gpu = enter_gpu(device, &result);
    if (gpu != NULL) result = copy_out(name, length, gpu->name);
    return leave(result);
}

NVML_API nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t device, char *uuid, unsigned int length) {
    nvmlReturn_t result;
    const struct mock_gpu *gpu = enter_gpu(device, &result);
    if (gpu != NULL) result = copy_out(uuid, length, gpu->uuid);
    return leave(result);
}

NVML_API nvmlReturn_t nvmlDeviceGetPciInfo_v3(nvmlDevice_t device, nvmlPciInfo_t *pci) {
    nvmlReturn_t result;
    const struct mock_gpu *gpu = enter_gpu(device, &result);
    if (gpu != NULL && pci == NULL) result = NVML_ERROR_INVALID_ARGUMENT;
    if (result == NVML_SUCCESS) {
        memset(pci, 0, sizeof *pci);
        snprintf(pci->busIdLegacy, sizeof pci->busIdLegacy, "%s", gpu->bus_id_legacy);
        snprintf(pci->busId, sizeof pci->busId, "%s", gpu->bus_id);
        pci->domain = gpu->domain;
        pci->bus = gpu->bus;
        pci->device = gpu->device;
        pci->pciDeviceId = gpu->pci_device_id;
        pci->pciSubSystemId = gpu->pci_subsystem_id;
    }
    return leave(result);
}

NVML_API nvmlReturn_t nvmlDeviceGetPciInfo_v2(nvmlDevice_t device, nvmlPciInfo_v2_t *pci) {
    nvmlReturn_t result;
    const struct mock_gpu *gpu = enter_gpu(device, &result);
    if (gpu != NULL && pci == NULL) result = NVML_ERROR_INVALID_ARGUMENT;
    if (result == NVML_SUCCESS) {
        memset(pci, 0, sizeof *pci);
        snprintf(pci->busId, sizeof pci->busId, "%s", gpu->bus_id_legacy);
        pci->domain = gpu->domain;
        pci->bus = gpu->bus;
        pci->device = gpu->device;
        pci->pciDeviceId = gpu->pci_device_id;
        pci->pciSubSystemId = gpu->pci_subsystem_id;
    }
    return leave(result);
}

NVML_API nvmlReturn_t nvmlDeviceGetPciInfo(nvmlDevice_t device, nvmlPciInfo_v2_t *pci) {
    return nvmlDeviceGetPciInfo_v2(device, pci);
}

NVML_API nvmlReturn_t nvmlDeviceGetArchitecture(nvmlDevice_t device, unsigned int *arch) {
    nvmlReturn_t result;
    const struct mock_gpu *gpu = enter_gpu(device, &result);
    if (gpu != NULL && arch == NULL) result = NVML_ERROR_INVALID_ARGUMENT;
    if (result == NVML_SUCCESS) *arch = gpu->architecture;
    return leave(result);
}

NVML_API nvmlReturn_t nvmlDeviceGetCudaComputeCapability(nvmlDevice_t device, int *major,
                                                         int *minor) {
    nvmlReturn_t result;
    const struct mock_gpu *gpu = enter_gpu(device, &result);
    if (gpu != NULL && (major == NULL || minor == NULL)) result = NVML_ERROR_INVALID_ARGUMENT;
    if (result == NVML_SUCCESS) {
        *major = gpu->compute_major;
        *minor = gpu->compute_minor;
    }
    return leave(result);
}

NVML_API nvmlReturn_t nvmlDeviceGetGpuFabricInfo(nvmlDevice_t device, nvmlGpuFabricInfo_t *info) {
    nvmlReturn_t result;
    const struct mock_gpu *gpu = enter_gpu(device, &result);
    if (gpu != NULL && info == NULL) result = NVML_ERROR_INVALID_ARGUMENT;
    if (result == NVML_SUCCESS) result = gpu->fabric.result;
    if (result == NVML_SUCCESS) {
        memset(info, 0, sizeof *info);
        memcpy(info->clusterUuid, gpu->fabric.cluster_uuid, 16);
        info->status = gpu->fabric.status;
        info->cliqueId = gpu->fabric.clique_id;
        info->state = gpu->fabric.state;
    }
    return leave(result);
}

/* Which struct a versioned call was given: 2, 3, or 0 for a version this profile refuses. */
static int fabric_version(const struct mock_profile *p, unsigned int version) {
    if (version == nvmlGpuFabricInfo_v3 && p->fabric_v3) return 3;
    if (version == nvmlGpuFabricInfo_v2 && p->fabric_v2) return 2;
    return 0;
}

/* The versioned call: the v2 and v3 structs share their prefix; v3 adds healthSummary. A profile
 * without versions models a driver that predates the call. */
NVML_API nvmlReturn_t nvmlDeviceGetGpuFabricInfoV(nvmlDevice_t device,
                                                  nvmlGpuFabricInfo_v3_t *info) {
    nvmlReturn_t result;
    const struct mock_gpu *gpu = enter_gpu(device, &result);
    int version = 0;
    if (gpu != NULL && !profile->fabric_v2 && !profile->fabric_v3)
        result = NVML_ERROR_FUNCTION_NOT_FOUND;
    else if (gpu != NULL && info == NULL)
        result = NVML_ERROR_INVALID_ARGUMENT;
    else if (gpu != NULL && (version = fabric_version(profile, info->version)) == 0)
        result = NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
    if (result == NVML_SUCCESS) result = gpu->fabric.result;
    if (result == NVML_SUCCESS) {
        unsigned int tag = info->version;
        memset(info, 0, version == 3 ? sizeof(nvmlGpuFabricInfo_v3_t)
                                     : sizeof(nvmlGpuFabricInfo_v2_t));
        info->version = tag;
        memcpy(info->clusterUuid, gpu->fabric.cluster_uuid, 16);
        info->status = gpu->fabric.status;
        info->cliqueId = gpu->fabric.clique_id;
        info->state = gpu->fabric.state;
        info->healthMask = gpu->fabric.health_mask;
        if (version == 3) info->healthSummary = gpu->fabric.health_summary;
    }
    return leave(result);
}
