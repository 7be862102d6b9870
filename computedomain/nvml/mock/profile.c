/*
 * Reading a profile document into a struct mock_profile (profile.h): the field checks.
 */
#include "profile.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"

#define MOCK_MAX_FILE_SIZE (1 << 20)

struct checker {
    char *error;
    size_t error_size;
};

static int refuse(struct checker *c, const char *field, const char *format, ...) {
    va_list args;
    int used = snprintf(c->error, c->error_size, "%s: ", field);
    if (used < 0 || (size_t)used >= c->error_size) return -1;
    va_start(args, format);
    vsnprintf(c->error + used, c->error_size - (size_t)used, format, args);
    va_end(args);
    return -1;
}

/* Every member of object is one of the names in allowed (NULL-terminated). */
static int only_known(struct checker *c, const struct json_value *object, const char *field,
                      const char *const *allowed) {
    for (size_t i = 0; i < object->as.object.count; i++) {
        const char *key = object->as.object.members[i].key;
        int known = 0;
        for (const char *const *name = allowed; *name != NULL; name++) known |= !strcmp(key, *name);
        if (!known) return refuse(c, field, "unknown member \"%s\"", key);
    }
    return 0;
}

static int get_integer(struct checker *c, const struct json_value *object, const char *key,
                       const char *field, long long low, long long high, int required,
                       long long fallback, long long *out) {
    const struct json_value *value = json_get(object, key);
    if (value == NULL) {
        if (required) return refuse(c, field, "is required");
        *out = fallback;
        return 0;
    }
    if (value->type != JSON_INTEGER)
        return refuse(c, field, "must be an integer from %lld to %lld (got %s)", low, high,
                      json_type_name(value->type));
    if (value->as.integer < low || value->as.integer > high)
        return refuse(c, field, "must be an integer from %lld to %lld (got %lld)", low, high,
                      value->as.integer);
    *out = value->as.integer;
    return 0;
}

static int get_string(struct checker *c, const struct json_value *object, const char *key,
                      const char *field, size_t size, int required, char *out) {
    const struct json_value *value = json_get(object, key);
    if (value == NULL) {
        if (required) return refuse(c, field, "is required");
        out[0] = '\0';
        return 0;
    }
    if (value->type != JSON_STRING) return refuse(c, field, "must be a string");
    size_t length = strlen(value->as.string);
    if (length == 0 || length >= size)
        return refuse(c, field, "must be 1 to %zu characters long (got %zu)", size - 1, length);
    memcpy(out, value->as.string, length + 1);
    return 0;
}

static int hex_value(char ch) {
    if (ch >= '0' && ch <= '9') return ch - '0';
    if (ch >= 'a' && ch <= 'f') return ch - 'a' + 10;
    if (ch >= 'A' && ch <= 'F') return ch - 'A' + 10;
    return -1;
}

static int lower_hex(char ch) {
    return (ch >= 'A' && ch <= 'F') ? -1 : hex_value(ch);
}

/* Canonical lowercase "xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx" into 16 bytes; -1 otherwise. */
static int parse_uuid(const char *text, unsigned char bytes[16]) {
    if (strlen(text) != 36) return -1;
    int n = 0;
    for (int i = 0; i < 36;) {
        if (i == 8 || i == 13 || i == 18 || i == 23) {
            if (text[i] != '-') return -1;
            i++;
            continue;
        }
        int high = lower_hex(text[i]), low = lower_hex(text[i + 1]);
        if (high < 0 || low < 0) return -1;
        bytes[n++] = (unsigned char)(high * 16 + low);
        i += 2;
    }
    return 0;
}

/* "0x" followed by 1 to 8 hex digits. */
static int parse_hex32(const char *text, unsigned int *out) {
    if (text[0] != '0' || (text[1] != 'x' && text[1] != 'X') || text[2] == '\0') return -1;
    unsigned long value = 0;
    size_t digits = 0;
    for (const char *ch = text + 2; *ch != '\0'; ch++, digits++) {
        int digit = hex_value(*ch);
        if (digit < 0 || digits == 8) return -1;
        value = value * 16 + (unsigned long)digit;
    }
    *out = (unsigned int)value;
    return 0;
}

/* Exactly "DDDDDDDD:BB:dd.F" in hex (NVML's bus ID format). */
static int parse_bus_id(struct mock_gpu *gpu, const char *text) {
    static const int widths[4] = {8, 2, 2, 1};
    static const char separators[4] = {':', ':', '.', '\0'};
    unsigned int parts[4] = {0, 0, 0, 0};
    const char *ch = text;
    for (int part = 0; part < 4; part++) {
        for (int i = 0; i < widths[part]; i++, ch++) {
            int digit = hex_value(*ch);
            if (digit < 0) return -1;
            parts[part] = parts[part] * 16 + (unsigned int)digit;
        }
        if (*ch != separators[part]) return -1;
        if (part < 3) ch++;
    }
    gpu->domain = parts[0];
    gpu->bus = parts[1];
    gpu->device = parts[2];
    snprintf(gpu->bus_id, sizeof gpu->bus_id, "%08X:%02X:%02X.%X", parts[0], parts[1], parts[2],
             parts[3]);
    snprintf(gpu->bus_id_legacy, sizeof gpu->bus_id_legacy, "%04X:%02X:%02X.%X", parts[0] & 0xFFFF,
             parts[1], parts[2], parts[3]);
    return 0;
}

static int read_fabric(struct checker *c, const struct json_value *fabric, const char *prefix,
                       struct mock_fabric *out) {
    static const char *const known[] = {"return",   "clusterUuid",   "cliqueId",      "state",
                                        "status",   "healthMask",    "healthSummary", NULL};
    char field[160];
    long long value;
    if (fabric->type != JSON_OBJECT) return refuse(c, prefix, "must be an object");
    if (only_known(c, fabric, prefix, known) != 0) return -1;
    snprintf(field, sizeof field, "%s.return", prefix);
    if (get_integer(c, fabric, "return", field, 0, 0xFFFFFFFFLL, 0, 0, &value) != 0) return -1;
    out->result = (unsigned int)value;
    if (out->result != 0) {
        for (const char *const *name = known + 1; *name != NULL; name++)
            if (json_get(fabric, *name) != NULL)
                return refuse(c, prefix, "\"%s\" is not allowed when \"return\" is not 0 (the "
                                         "call fails, so it fills nothing)", *name);
        return 0;
    }
    const struct json_value *cluster = json_get(fabric, "clusterUuid");
    snprintf(field, sizeof field, "%s.clusterUuid", prefix);
    if (cluster == NULL) return refuse(c, field, "is required");
    if (cluster->type != JSON_STRING || parse_uuid(cluster->as.string, out->cluster_uuid) != 0)
        return refuse(c, field, "must be a lowercase UUID like "
                                "\"7c1f3a52-9d0e-4b6a-8f21-3e5d9c0b4a17\"");
    snprintf(field, sizeof field, "%s.cliqueId", prefix);
    if (get_integer(c, fabric, "cliqueId", field, 0, 0xFFFFFFFFLL, 1, 0, &value) != 0) return -1;
    out->clique_id = (unsigned int)value;
    snprintf(field, sizeof field, "%s.state", prefix);
    if (get_integer(c, fabric, "state", field, 0, 255, 1, 0, &value) != 0) return -1;
    out->state = (unsigned char)value;
    snprintf(field, sizeof field, "%s.status", prefix);
    if (get_integer(c, fabric, "status", field, 0, 0xFFFFFFFFLL, 1, 0, &value) != 0) return -1;
    out->status = (unsigned int)value;
    snprintf(field, sizeof field, "%s.healthMask", prefix);
    if (get_integer(c, fabric, "healthMask", field, 0, 0xFFFFFFFFLL, 0, 0, &value) != 0) return -1;
    out->health_mask = (unsigned int)value;
    snprintf(field, sizeof field, "%s.healthSummary", prefix);
    if (get_integer(c, fabric, "healthSummary", field, 0, 255, 0, 0, &value) != 0) return -1;
    out->health_summary = (unsigned char)value;
    return 0;
}

static int read_gpu(struct checker *c, const struct json_value *item, unsigned int index,
                    struct mock_gpu *out) {
    static const char *const known[] = {
        "name",         "uuid", "pciBusId", "pciDeviceId", "pciSubSystemId", "architecture",
        "cudaComputeCapability", "fabric", NULL};
    char prefix[48], field[96];
    long long value;
    unsigned char ignored[16];
    snprintf(prefix, sizeof prefix, "gpus[%u]", index);
    if (item->type != JSON_OBJECT) return refuse(c, prefix, "must be an object");
    if (only_known(c, item, prefix, known) != 0) return -1;
    snprintf(field, sizeof field, "%s.name", prefix);
    if (get_string(c, item, "name", field, sizeof out->name, 1, out->name) != 0) return -1;
    snprintf(field, sizeof field, "%s.uuid", prefix);
    if (get_string(c, item, "uuid", field, sizeof out->uuid, 1, out->uuid) != 0) return -1;
    if (strncmp(out->uuid, "GPU-", 4) != 0 || parse_uuid(out->uuid + 4, ignored) != 0)
        return refuse(c, field, "must be \"GPU-\" and a lowercase UUID (got \"%s\")", out->uuid);
    snprintf(field, sizeof field, "%s.pciBusId", prefix);
    char text[MOCK_BUS_ID_SIZE];
    if (get_string(c, item, "pciBusId", field, sizeof text, 1, text) != 0) return -1;
    if (parse_bus_id(out, text) != 0)
        return refuse(c, field, "must look like \"00000008:01:00.0\" (got \"%s\")", text);
    const char *ids[2] = {"pciDeviceId", "pciSubSystemId"};
    unsigned int *targets[2] = {&out->pci_device_id, &out->pci_subsystem_id};
    for (int i = 0; i < 2; i++) {
        snprintf(field, sizeof field, "%s.%s", prefix, ids[i]);
        if (get_string(c, item, ids[i], field, sizeof text, 1, text) != 0) return -1;
        if (parse_hex32(text, targets[i]) != 0)
            return refuse(c, field, "must be \"0x\" and 1 to 8 hex digits (got \"%s\")", text);
    }
    snprintf(field, sizeof field, "%s.architecture", prefix);
    if (get_integer(c, item, "architecture", field, 0, 0xFFFFFFFFLL, 1, 0, &value) != 0) return -1;
    out->architecture = (unsigned int)value;
    snprintf(field, sizeof field, "%s.cudaComputeCapability", prefix);
    const struct json_value *cc = json_get(item, "cudaComputeCapability");
    if (cc == NULL) return refuse(c, field, "is required");
    if (cc->type != JSON_ARRAY || cc->as.array.count != 2 ||
        cc->as.array.items[0].type != JSON_INTEGER || cc->as.array.items[1].type != JSON_INTEGER ||
        cc->as.array.items[0].as.integer < 0 || cc->as.array.items[0].as.integer > 1000 ||
        cc->as.array.items[1].as.integer < 0 || cc->as.array.items[1].as.integer > 1000)
        return refuse(c, field, "must be [major, minor], integers from 0 to 1000");
    out->compute_major = (int)cc->as.array.items[0].as.integer;
    out->compute_minor = (int)cc->as.array.items[1].as.integer;
    snprintf(field, sizeof field, "%s.fabric", prefix);
    const struct json_value *fabric = json_get(item, "fabric");
    if (fabric == NULL) return refuse(c, field, "is required");
    return read_fabric(c, fabric, field, &out->fabric);
}

static int read_versions(struct checker *c, const struct json_value *doc,
                         struct mock_profile *out) {
    const struct json_value *versions = json_get(doc, "fabricInfoVersions");
    if (versions == NULL) return refuse(c, "fabricInfoVersions", "is required");
    if (versions->type != JSON_ARRAY)
        return refuse(c, "fabricInfoVersions", "must be an array of 2 and 3");
    for (size_t i = 0; i < versions->as.array.count; i++) {
        const struct json_value *v = &versions->as.array.items[i];
        int *slot = NULL;
        if (v->type == JSON_INTEGER && v->as.integer == 2) slot = &out->fabric_v2;
        if (v->type == JSON_INTEGER && v->as.integer == 3) slot = &out->fabric_v3;
        if (slot == NULL)
            return refuse(c, "fabricInfoVersions", "item %zu: must be 2 or 3", i);
        if (*slot) return refuse(c, "fabricInfoVersions", "item %zu: listed twice", i);
        *slot = 1;
    }
    return 0;
}

static int read_document(struct checker *c, const struct json_value *doc,
                         struct mock_profile *out) {
    static const char *const known[] = {"description",        "driverVersion", "nvmlVersion",
                                        "cudaDriverVersion",  "initReturn",    "gpus",
                                        "fabricInfoVersions", NULL};
    long long value;
    char ignored[4096];
    if (doc->type != JSON_OBJECT) return refuse(c, "document", "must be an object");
    if (only_known(c, doc, "document", known) != 0) return -1;
    if (get_string(c, doc, "description", "description", sizeof ignored, 0, ignored) != 0)
        return -1;
    if (get_integer(c, doc, "initReturn", "initReturn", 0, 0xFFFFFFFFLL, 0, 0, &value) != 0)
        return -1;
    out->init_result = (unsigned int)value;
    if (get_string(c, doc, "driverVersion", "driverVersion", sizeof out->driver_version, 1,
                   out->driver_version) != 0 ||
        get_string(c, doc, "nvmlVersion", "nvmlVersion", sizeof out->nvml_version, 1,
                   out->nvml_version) != 0)
        return -1;
    if (get_integer(c, doc, "cudaDriverVersion", "cudaDriverVersion", 0, 0x7FFFFFFF, 1, 0,
                    &value) != 0)
        return -1;
    out->cuda_driver_version = (int)value;
    if (read_versions(c, doc, out) != 0) return -1;
    const struct json_value *gpus = json_get(doc, "gpus");
    if (gpus == NULL) return refuse(c, "gpus", "is required");
    if (gpus->type != JSON_ARRAY) return refuse(c, "gpus", "must be an array");
    if (gpus->as.array.count > MOCK_MAX_GPUS)
        return refuse(c, "gpus", "at most %d GPUs (got %zu)", MOCK_MAX_GPUS, gpus->as.array.count);
    out->gpu_count = (unsigned int)gpus->as.array.count;
    for (unsigned int i = 0; i < out->gpu_count; i++) {
        if (read_gpu(c, &gpus->as.array.items[i], i, &out->gpus[i]) != 0) return -1;
        for (unsigned int j = 0; j < i; j++) {
            char field[48];
            if (!strcmp(out->gpus[j].uuid, out->gpus[i].uuid)) {
                snprintf(field, sizeof field, "gpus[%u].uuid", i);
                return refuse(c, field, "repeats the UUID of gpus[%u]", j);
            }
            if (!strcmp(out->gpus[j].bus_id, out->gpus[i].bus_id)) {
                snprintf(field, sizeof field, "gpus[%u].pciBusId", i);
                return refuse(c, field, "repeats the bus ID of gpus[%u]", j);
            }
        }
    }
    return 0;
}

int mock_profile_parse(const char *text, size_t length, struct mock_profile *out, char *error,
                       size_t error_size) {
    struct json_value doc;
    char detail[256];
    struct checker c = {error, error_size};
    memset(out, 0, sizeof *out);
    if (json_parse(text, length, &doc, detail, sizeof detail) != 0) {
        snprintf(error, error_size, "not valid JSON: %s", detail);
        return -1;
    }
    int result = read_document(&c, &doc, out);
    json_free(&doc);
    return result;
}

int mock_profile_load(const char *path, struct mock_profile *out, char *error,
                      size_t error_size) {
    FILE *file = fopen(path, "rb");
    if (file == NULL) {
        snprintf(error, error_size, "cannot open: %s", strerror(errno));
        return -1;
    }
    char *text = malloc(MOCK_MAX_FILE_SIZE + 1);
    if (text == NULL) {
        fclose(file);
        snprintf(error, error_size, "out of memory");
        return -1;
    }
    size_t length = fread(text, 1, MOCK_MAX_FILE_SIZE + 1, file);
    int failed = ferror(file);
    fclose(file);
    int result = -1;
    if (failed)
        snprintf(error, error_size, "cannot read: %s", strerror(errno));
    else if (length > MOCK_MAX_FILE_SIZE)
        snprintf(error, error_size, "larger than %d bytes", MOCK_MAX_FILE_SIZE);
    else
        result = mock_profile_parse(text, length, out, error, error_size);
    free(text);
    return result;
}
