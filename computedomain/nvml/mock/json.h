/*
 * A small strict JSON reader for the mock NVML library's profile files.
 *
 * It parses a whole document into a tree (objects keep their members in file order), accepts
 * only what the profile format needs (integers, no fractions or exponents) and reports the first
 * error with its line and column. Nesting is bounded, duplicate keys are rejected, and every
 * failure is an error message, never a crash.
 */
#ifndef NVML_MOCK_JSON_H
#define NVML_MOCK_JSON_H

#include <stddef.h>

enum json_type { JSON_NULL, JSON_BOOL, JSON_INTEGER, JSON_STRING, JSON_ARRAY, JSON_OBJECT };

struct json_member;

struct json_value {
    enum json_type type;
    int line, column; /* where the value starts, for error messages */
    union {
        int boolean;
        long long integer;
        char *string; /* NUL-terminated UTF-8; a JSON "\u0000" is rejected */
        struct {
            struct json_value *items;
            size_t count;
        } array;
        struct {
            struct json_member *members;
            size_t count;
        } object;
    } as;
};

struct json_member {
    char *key;
    struct json_value value;
};

/* Parse text[0..length) into *out. 0 on success; -1 with a message in error otherwise. */
int json_parse(const char *text, size_t length, struct json_value *out, char *error,
               size_t error_size);

/* Release what json_parse allocated (safe on a zeroed value). */
void json_free(struct json_value *value);

/* The member named key of an object, or NULL. */
const struct json_value *json_get(const struct json_value *object, const char *key);

/* "object", "string", ... for messages. */
const char *json_type_name(enum json_type type);

#endif
