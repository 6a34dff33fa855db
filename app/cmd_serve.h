/* cmd_serve.h — `sbsim serve` (cmd_serve.c). */
#ifndef SB_APP_CMD_SERVE_H
#define SB_APP_CMD_SERVE_H

/* argv[0] is "serve". Returns the exit status. */
int sb_cmd_serve(int argc, char **argv);

#endif
