/*
 * interrupt.h — SIGINT/SIGTERM for the commands that measure a server
 * (run, validate): the first signal asks the measurement to stop (what
 * finished is kept and reported), a second ends the process at once.
 */
#ifndef SB_APP_INTERRUPT_H
#define SB_APP_INTERRUPT_H

#include <signal.h>

/* Installs the handlers for SIGINT and SIGTERM (the second one of either
 * takes the default action) and ignores SIGPIPE. Returns the flag they
 * set: 0 until a signal arrives, then its number. */
const volatile sig_atomic_t *sb_interrupt_install(void);

/* The signal that arrived, 0 if none. */
int sb_interrupt_signal(void);

#endif
