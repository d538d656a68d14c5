/* option-table-py: writes python/nmt/_option_table.py, translate's option
 * table (apps/common/option_table.c) as the Python binding reads it: each
 * row's name, kind, range and choices, so that the binding's keyword checks
 * come from the rows the command line and the INI file use.
 *     build/option-table-py > python/nmt/_option_table.py
 * tests/dev/test_option_table_py.sh fails when the committed file differs
 * from this program's output. */
#include "options.h"

#include <stdio.h>
#include <string.h>

static const char *kind_name(app_option_kind kind)
{
    switch (kind) {
    case APP_OPT_FLAG: return "flag";
    case APP_OPT_BOOL: return "bool";
    case APP_OPT_INT: return "int";
    case APP_OPT_FLOAT: return "float";
    case APP_OPT_SIZE: return "size";
    case APP_OPT_CHOICE: return "choice";
    case APP_OPT_STRING: return "string";
    case APP_OPT_LIST: return "list";
    case APP_OPT_CUSTOM: return "custom";
    }
    return "unknown";
}

/* A bound as a Python literal: an int for INT rows, a float (with its
 * point, so Python reads a float) for FLOAT rows. */
static int print_bound(const app_option *row, double bound)
{
    if (row->kind == APP_OPT_INT)
        return printf("%lld", (long long)bound);
    char text[64];
    snprintf(text, sizeof text, "%.17g", bound);
    return printf("%s%s", text, strpbrk(text, ".e") ? "" : ".0");
}

static int print_row(const app_option *row)
{
    if (printf("    \"%s\": {\"kind\": \"%s\"", row->name, kind_name(row->kind)) < 0)
        return -1;
    if (row->kind == APP_OPT_INT || row->kind == APP_OPT_FLOAT) {
        if (printf(", \"lo\": ") < 0 || print_bound(row, row->lo) < 0 ||
            printf(", \"hi\": ") < 0 || print_bound(row, row->hi) < 0)
            return -1;
    }
    if (row->kind == APP_OPT_CHOICE) { /* a tuple of (name, value) pairs, on a line of its own */
        if (printf(", \"choices\": (\n       ") < 0)
            return -1;
        for (const app_choice *c = row->choices; c->name; c++)
            if (printf(" (\"%s\", %d),", c->name, c->value) < 0)
                return -1;
        if (printf(")") < 0)
            return -1;
    }
    return printf("},\n");
}

int main(void)
{
    if (printf("\"\"\"translate's option table (apps/common/option_table.c): each row's\n"
               "kind, range (int, float) and choices (name, value), by the long option\n"
               "name. Written by dev/option-table/option_table_py.c: do not edit;\n"
               "regenerate with build/option-table-py > python/nmt/_option_table.py\n"
               "(tests/dev/test_option_table_py.sh fails while it differs).\"\"\"\n\n"
               "ROWS = {\n") < 0)
        return 1;
    for (const app_option *row = app_translate_options; row->name; row++)
        if (print_row(row) < 0)
            return 1;
    if (printf("}\n") < 0 || fflush(stdout) != 0)
        return 1;
    return 0;
}
