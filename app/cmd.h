/* cmd.h — the servebench subcommands. Each takes argv starting at the
 * subcommand's name and returns the process exit status:
 * 0 success, 1 the run finished but something failed, 2 bad usage/input. */
#ifndef SB_CMD_H
#define SB_CMD_H

int sb_cmd_run(int argc, char **argv);
int sb_cmd_calibrate(int argc, char **argv);
int sb_cmd_validate(int argc, char **argv);
int sb_cmd_plot(int argc, char **argv);
int sb_cmd_export(int argc, char **argv);

#endif
