/* option_help.c: the option lines of a program's --help, from its rows
 * (options.h): "  -b, --beam N" and the row's help text from column 26. */
#include "options.h"

#include <stdio.h>
#include <string.h>

enum { kTextColumn = 26 };

/* "auto|cpu|cuda": a choice row's names, when it names no value itself. */
static void choice_names(const app_option *row, char *out, size_t size)
{
    size_t n = 0;
    out[0] = 0;
    for (const app_choice *c = row->choices; c && c->name && n < size; c++)
        n += (size_t)snprintf(out + n, size - n, "%s%s", c == row->choices ? "" : "|", c->name);
}

int app_print_options(const app_option *rows)
{
    int written = 0;
    for (const app_option *row = rows; row->name && written >= 0; row++) {
        if (!row->help || row->scope == APP_OPT_INI_ONLY)
            continue;
        if (row->heading && printf("%s", row->heading) < 0)
            return -1;
        char left[128], names[96];
        const char *arg = row->arg;
        if (!arg && row->kind == APP_OPT_CHOICE) {
            choice_names(row, names, sizeof names);
            arg = names;
        }
        if (row->short_name)
            snprintf(left, sizeof left, "  -%c, --%s%s%s", row->short_name, row->name,
                     arg ? " " : "", arg ? arg : "");
        else
            snprintf(left, sizeof left, "      --%s%s%s", row->name, arg ? " " : "",
                     arg ? arg : "");
        /* a long name and value take a line of their own */
        const int own_line = (int)strlen(left) > kTextColumn - 2;
        written = printf("%s%s%*s", left, own_line ? "\n" : "",
                         own_line ? kTextColumn : kTextColumn - (int)strlen(left), "");
        for (const char *line = row->help; written >= 0 && *line;) {
            const size_t len = strcspn(line, "\n");
            written = printf("%.*s\n", (int)len, line);
            line += len;
            if (*line && written >= 0) {
                line++;
                written = printf("%*s", kTextColumn, "");
            }
        }
    }
    return written;
}
