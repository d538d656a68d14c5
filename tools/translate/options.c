/* placeholder */
typedef int nmt_translate_options_placeholder;
