/* sequences.c: an item's token sequences (its "suppress" field: a list of
 * sequences, each a string of target tokens or a list of them) as the
 * library reads them (server.h; docs/decoding.md, "Logit rules"). */
#include "server.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>

int server_is_sequences(json_t *list)
{
    size_t k, t;
    json_t *seq, *token;
    int ok = json_is_array(list);
    json_array_foreach(list, k, seq) {
        ok = ok && (json_is_string(seq) || json_is_array(seq));
        json_array_foreach(json_is_array(seq) ? seq : NULL, t, token)
            ok = ok && json_is_string(token);
    }
    return ok;
}

char *server_sequences_text(json_t *list, int *failed)
{
    json_t *seq, *token;
    size_t k, t, bytes = 1, at = 0;
    *failed = 0;
    if (!list)
        return NULL;
    json_array_foreach(list, k, seq) {
        bytes += json_is_string(seq) ? json_string_length(seq) + 1 : 1;
        json_array_foreach(json_is_array(seq) ? seq : NULL, t, token)
            bytes += json_string_length(token) + 1;
    }
    char *text = malloc(bytes);
    if (!text) {
        *failed = 1;
        return NULL;
    }
    text[0] = '\0';
    json_array_foreach(list, k, seq) {
        if (json_is_string(seq))
            at += (size_t)snprintf(text + at, bytes - at, "%s", json_string_value(seq));
        json_array_foreach(json_is_array(seq) ? seq : NULL, t, token)
            at += (size_t)snprintf(text + at, bytes - at, "%s%s", t ? " " : "",
                                   json_string_value(token));
        at += (size_t)snprintf(text + at, bytes - at, "\n");
    }
    return text;
}
