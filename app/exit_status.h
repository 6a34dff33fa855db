/* exit_status.h — the process exit status of every command, from the
 * negative errno its library call returned:
 *   0  success
 *   1  the run finished but something failed (an I/O error, out of memory,
 *      a check that did not hold)
 *   2  bad usage or input (-EINVAL, -ERANGE, -EDOM, -ENOENT, -ENOTSUP, ...)
 *   3  the server could not be reached (-ECONNREFUSED, -EHOSTUNREACH,
 *      -ENETUNREACH, -EHOSTDOWN, -ETIMEDOUT at connect)
 * (130/143 for SIGINT/SIGTERM are `servebench run`'s own.) */
#ifndef SB_EXIT_STATUS_H
#define SB_EXIT_STATUS_H

enum { SB_EXIT_OK = 0, SB_EXIT_FAILED = 1, SB_EXIT_USAGE = 2, SB_EXIT_UNREACHABLE = 3 };

/* err: 0 or a negative errno. */
int sb_exit_status(int err);

#endif
