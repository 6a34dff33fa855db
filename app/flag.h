/* flag.h — command-line flags of the servebench subcommands. */
#ifndef SB_APP_FLAG_H
#define SB_APP_FLAG_H

/* If argv[*i] is `name` ("--flag value" or "--flag=value"), sets *matched
 * and returns the value (advancing *i past a separate value), or NULL when
 * the value is missing. Otherwise *matched = 0 and NULL. */
const char *sb_flag_value(int argc, char **argv, int *i, const char *name, int *matched);

#endif
