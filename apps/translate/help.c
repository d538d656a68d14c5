/* help.c: the --help text of translate: its option lines come from the
 * option rows (apps/common/option_table.c). The README's option table
 * follows it; tests/apps/test_cli_options.sh checks that every option here
 * is there. */
#include "options.h"

#include <stdio.h>

int translate_print_help(const char *program)
{
    if (printf(
        "Usage: %s -m MODEL [options] < input.txt > output.txt\n"
        "       %s -m MODEL -i input.txt -o output.txt [options]\n"
        "\n"
        "Translates standard input line by line with beam search. Every input line gives\n"
        "exactly one output line, in order; an empty line gives an empty line; an invalid\n"
        "line (bad UTF-8, too long) is reported on stderr with its line number and gives\n"
        "an empty line, and the rest continue.\n"
        "\n"
        "Options (each but -c, -h and -V also an INI key: the long name without dashes,\n"
        "'-' as '_', e.g. beam = 5; a flag takes 1 or 0, e.g. no_unk_replace = 1):\n",
        program, program) < 0)
        return -1;
    if (app_print_options(app_translate_options) < 0)
        return -1;
    return printf(
        "\n"
        "Exit status: 0 all lines translated; 1 some lines were refused (each still has an\n"
        "output line); 2 bad option or configuration (also --device cuda without a usable\n"
        "GPU, an unwritable --stats/--timing path); 3 the model could not be loaded;\n"
        "4 translation failed (device error, out of memory); 5 an I/O error: reading\n"
        "standard input or writing standard output or the --stats/--timing file failed.\n");
}
