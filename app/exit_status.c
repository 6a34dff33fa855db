/* exit_status.c — exit statuses from negative errnos (see exit_status.h). */
#include "exit_status.h"

#include <errno.h>

int sb_exit_status(int err)
{
	switch (-err) {
	case 0:
		return SB_EXIT_OK;
	case ECONNREFUSED:
	case EHOSTUNREACH:
	case ENETUNREACH:
	case EHOSTDOWN:
	case ETIMEDOUT:
		return SB_EXIT_UNREACHABLE;
	case EINVAL:
	case ERANGE:
	case EDOM:
	case ENOENT:
	case ENOTSUP:
	case E2BIG:
		return SB_EXIT_USAGE;
	default:
		return SB_EXIT_FAILED;
	}
}
