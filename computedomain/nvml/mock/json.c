/*
 * The strict JSON reader of json.h: recursive descent over a bounded depth.
 */
#include "json.h"

#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define JSON_MAX_DEPTH 32

struct parser {
    const char *text;
    size_t length, pos;
    int line, column;
    char *error;
    size_t error_size;
};

static int fail(struct parser *p, const char *format, ...) {
    va_list args;
    int used = snprintf(p->error, p->error_size, "line %d, column %d: ", p->line, p->column);
    if (used < 0 || (size_t)used >= p->error_size) return -1;
    va_start(args, format);
    vsnprintf(p->error + used, p->error_size - (size_t)used, format, args);
    va_end(args);
    return -1;
}

static int peek(const struct parser *p) {
    return p->pos < p->length ? (unsigned char)p->text[p->pos] : -1;
}

static void advance(struct parser *p) {
    if (p->text[p->pos] == '\n') {
        p->line++;
        p->column = 1;
    } else {
        p->column++;
    }
    p->pos++;
}

static void skip_space(struct parser *p) {
    for (int c = peek(p); c == ' ' || c == '\t' || c == '\n' || c == '\r'; c = peek(p)) advance(p);
}

static int parse_value(struct parser *p, struct json_value *out, int depth);

static int expect_word(struct parser *p, const char *word) {
    size_t n = strlen(word);
    if (p->length - p->pos < n || memcmp(p->text + p->pos, word, n) != 0)
        return fail(p, "unexpected character (want a JSON value)");
    for (size_t i = 0; i < n; i++) advance(p);
    return 0;
}

static int parse_integer(struct parser *p, struct json_value *out) {
    int negative = 0;
    unsigned long long magnitude = 0;
    if (peek(p) == '-') {
        negative = 1;
        advance(p);
    }
    int c = peek(p);
    if (c < '0' || c > '9') return fail(p, "a number needs digits");
    if (c == '0') {
        advance(p);
        c = peek(p);
        if (c >= '0' && c <= '9') return fail(p, "numbers must not have leading zeros");
    } else {
        for (; c >= '0' && c <= '9'; c = peek(p)) {
            unsigned long long digit = (unsigned long long)(c - '0');
            if (magnitude > ((unsigned long long)LLONG_MAX - digit) / 10)
                return fail(p, "number out of range");
            magnitude = magnitude * 10 + digit;
            advance(p);
        }
    }
    if (c == '.' || c == 'e' || c == 'E') return fail(p, "only integers are allowed");
    out->type = JSON_INTEGER;
    out->as.integer = negative ? -(long long)magnitude : (long long)magnitude;
    return 0;
}

static int hex_digit(int c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

/* Appends one byte to a growing buffer; -1 when out of memory. */
static int append(char **buffer, size_t *used, size_t *capacity, char byte) {
    if (*used + 1 >= *capacity) {
        size_t grown = *capacity ? *capacity * 2 : 32;
        char *bigger = realloc(*buffer, grown);
        if (bigger == NULL) return -1;
        *buffer = bigger;
        *capacity = grown;
    }
    (*buffer)[(*used)++] = byte;
    (*buffer)[*used] = '\0';
    return 0;
}

static int parse_escape(struct parser *p, char **buffer, size_t *used, size_t *capacity) {
    int c = peek(p);
    const char *simple = "\"\\/bfnrt";
    const char *meaning = "\"\\/\b\f\n\r\t";
    const char *found = c > 0 ? strchr(simple, c) : NULL;
    if (found != NULL) {
        advance(p);
        return append(buffer, used, capacity, meaning[found - simple]);
    }
    if (c != 'u') return fail(p, "invalid escape in a string");
    advance(p);
    unsigned code = 0;
    for (int i = 0; i < 4; i++) {
        int digit = hex_digit(peek(p));
        if (digit < 0) return fail(p, "\\u needs four hex digits");
        code = code * 16 + (unsigned)digit;
        advance(p);
    }
    if (code == 0) return fail(p, "\\u0000 is not allowed in a string");
    if (code >= 0xD800 && code <= 0xDFFF)
        return fail(p, "surrogate escapes are not supported (write the character itself)");
    int ok = 0;
    if (code < 0x80) {
        ok |= append(buffer, used, capacity, (char)code);
    } else if (code < 0x800) {
        ok |= append(buffer, used, capacity, (char)(0xC0 | (code >> 6)));
        ok |= append(buffer, used, capacity, (char)(0x80 | (code & 0x3F)));
    } else {
        ok |= append(buffer, used, capacity, (char)(0xE0 | (code >> 12)));
        ok |= append(buffer, used, capacity, (char)(0x80 | ((code >> 6) & 0x3F)));
        ok |= append(buffer, used, capacity, (char)(0x80 | (code & 0x3F)));
    }
    return ok;
}

static int parse_string(struct parser *p, char **result) {
    size_t used = 0, capacity = 32;
    char *buffer = malloc(capacity);
    if (buffer == NULL) return fail(p, "out of memory");
    buffer[0] = '\0';
    advance(p); /* the opening quote */
    for (;;) {
        int c = peek(p);
        if (c < 0) {
            free(buffer);
            return fail(p, "unterminated string");
        }
        if (c == '"') {
            advance(p);
            *result = buffer;
            return 0;
        }
        if (c < 0x20) {
            free(buffer);
            return fail(p, "control character in a string");
        }
        int status;
        if (c == '\\') {
            advance(p);
            status = parse_escape(p, &buffer, &used, &capacity);
        } else {
            advance(p);
            status = append(&buffer, &used, &capacity, (char)c);
        }
        if (status != 0) {
            free(buffer);
            if (p->error[0] == '\0') fail(p, "out of memory");
            return -1;
        }
    }
}

static int parse_array(struct parser *p, struct json_value *out, int depth) {
    size_t capacity = 0;
    out->type = JSON_ARRAY;
    advance(p);
    skip_space(p);
    if (peek(p) == ']') {
        advance(p);
        return 0;
    }
    for (;;) {
        if (out->as.array.count == capacity) {
            size_t grown = capacity ? capacity * 2 : 4;
            struct json_value *bigger = realloc(out->as.array.items, grown * sizeof *bigger);
            if (bigger == NULL) return fail(p, "out of memory");
            out->as.array.items = bigger;
            capacity = grown;
        }
        struct json_value *item = &out->as.array.items[out->as.array.count];
        memset(item, 0, sizeof *item);
        out->as.array.count++;
        if (parse_value(p, item, depth + 1) != 0) return -1;
        skip_space(p);
        int c = peek(p);
        if (c == ',') {
            advance(p);
            continue;
        }
        if (c == ']') {
            advance(p);
            return 0;
        }
        return fail(p, "expected ',' or ']' in an array");
    }
}

static int parse_object(struct parser *p, struct json_value *out, int depth) {
    size_t capacity = 0;
    out->type = JSON_OBJECT;
    advance(p);
    skip_space(p);
    if (peek(p) == '}') {
        advance(p);
        return 0;
    }
    for (;;) {
        skip_space(p);
        if (peek(p) != '"') return fail(p, "expected a quoted member name");
        if (out->as.object.count == capacity) {
            size_t grown = capacity ? capacity * 2 : 8;
            struct json_member *bigger = realloc(out->as.object.members, grown * sizeof *bigger);
            if (bigger == NULL) return fail(p, "out of memory");
            out->as.object.members = bigger;
            capacity = grown;
        }
        struct json_member *member = &out->as.object.members[out->as.object.count];
        memset(member, 0, sizeof *member);
        out->as.object.count++;
        if (parse_string(p, &member->key) != 0) return -1;
        for (size_t i = 0; i + 1 < out->as.object.count; i++)
            if (strcmp(out->as.object.members[i].key, member->key) == 0)
                return fail(p, "duplicate member \"%s\"", member->key);
        skip_space(p);
        if (peek(p) != ':') return fail(p, "expected ':' after member \"%s\"", member->key);
        advance(p);
        if (parse_value(p, &member->value, depth + 1) != 0) return -1;
        skip_space(p);
        int c = peek(p);
        if (c == ',') {
            advance(p);
            continue;
        }
        if (c == '}') {
            advance(p);
            return 0;
        }
        return fail(p, "expected ',' or '}' in an object");
    }
}

static int parse_value(struct parser *p, struct json_value *out, int depth) {
    if (depth > JSON_MAX_DEPTH) return fail(p, "nested deeper than %d levels", JSON_MAX_DEPTH);
    skip_space(p);
    out->line = p->line;
    out->column = p->column;
    int c = peek(p);
    switch (c) {
    case -1:
        return fail(p, "unexpected end of input (want a JSON value)");
    case '{':
        return parse_object(p, out, depth);
    case '[':
        return parse_array(p, out, depth);
    case '"':
        out->type = JSON_STRING;
        return parse_string(p, &out->as.string);
    case 't':
        out->type = JSON_BOOL;
        out->as.boolean = 1;
        return expect_word(p, "true");
    case 'f':
        out->type = JSON_BOOL;
        return expect_word(p, "false");
    case 'n':
        out->type = JSON_NULL;
        return expect_word(p, "null");
    default:
        if (c == '-' || (c >= '0' && c <= '9')) return parse_integer(p, out);
        return fail(p, "unexpected character (want a JSON value)");
    }
}

/* Whether text[0..length) is well-formed UTF-8 (no overlong forms, surrogates or values past
 * U+10FFFF), as a strict decoder reads it. */
static int valid_utf8(const unsigned char *text, size_t length) {
    size_t i = 0;
    while (i < length) {
        unsigned char lead = text[i];
        size_t extra;
        unsigned char low = 0x80, high = 0xBF; /* the range of the second byte */
        if (lead < 0x80) {
            i++;
            continue;
        } else if (lead >= 0xC2 && lead <= 0xDF) {
            extra = 1;
        } else if (lead >= 0xE0 && lead <= 0xEF) {
            extra = 2;
            if (lead == 0xE0) low = 0xA0;
            if (lead == 0xED) high = 0x9F;
        } else if (lead >= 0xF0 && lead <= 0xF4) {
            extra = 3;
            if (lead == 0xF0) low = 0x90;
            if (lead == 0xF4) high = 0x8F;
        } else {
            return 0;
        }
        if (length - i <= extra || text[i + 1] < low || text[i + 1] > high) return 0;
        for (size_t k = 2; k <= extra; k++)
            if (text[i + k] < 0x80 || text[i + k] > 0xBF) return 0;
        i += extra + 1;
    }
    return 1;
}

int json_parse(const char *text, size_t length, struct json_value *out, char *error,
               size_t error_size) {
    struct parser p = {text, length, 0, 1, 1, error, error_size};
    memset(out, 0, sizeof *out);
    if (error_size > 0) error[0] = '\0';
    if (!valid_utf8((const unsigned char *)text, length)) {
        snprintf(error, error_size, "not UTF-8 text");
        return -1;
    }
    if (parse_value(&p, out, 0) == 0) {
        skip_space(&p);
        if (p.pos == p.length) return 0;
        fail(&p, "unexpected text after the document");
    }
    json_free(out);
    return -1;
}

void json_free(struct json_value *value) {
    if (value->type == JSON_STRING) {
        free(value->as.string);
    } else if (value->type == JSON_ARRAY) {
        for (size_t i = 0; i < value->as.array.count; i++) json_free(&value->as.array.items[i]);
        free(value->as.array.items);
    } else if (value->type == JSON_OBJECT) {
        for (size_t i = 0; i < value->as.object.count; i++) {
            free(value->as.object.members[i].key);
            json_free(&value->as.object.members[i].value);
        }
        free(value->as.object.members);
    }
    memset(value, 0, sizeof *value);
}

const struct json_value *json_get(const struct json_value *object, const char *key) {
    if (object->type != JSON_OBJECT) return NULL;
    for (size_t i = 0; i < object->as.object.count; i++)
        if (strcmp(object->as.object.members[i].key, key) == 0)
            return &object->as.object.members[i].value;
    return NULL;
}

const char *json_type_name(enum json_type type) {
    switch (type) {
    case JSON_NULL:
        return "null";
    case JSON_BOOL:
        return "a boolean";
    case JSON_INTEGER:
        return "an integer";
    case JSON_STRING:
        return "a string";
    case JSON_ARRAY:
        return "an array";
    case JSON_OBJECT:
        return "an object";
    }
    return "a value";
}
