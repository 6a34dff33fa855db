/* burst.c — the floor under a token's lateness in a one-thread server: N
 * loopback TCP streams all decoding in one batch get their token at the
 * same step end, and the k-th of the N writes leaves k sends after it.
 * This does nothing but those sends: one send() of a 130-byte SSE chunk
 * per stream per step, no HTTP library, no JSON, no engine, while a child
 * process drains every stream with epoll on the other core (a client).
 * Each write's lateness is the time from the step's start to its send's
 * return; `sbsim serve` cannot write a token sooner than this.
 *
 * usage: burst STREAMS STEPS STEP_MS
 * prints: streams=N sends=S us_per_send=X lateness_p50_ms=A p99_ms=B
 *         within_1ms=F
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

/* The child: reads every stream until all close. */
static void drain(int *fds, int n)
{
	int ep = epoll_create1(0), open = n;
	for (int i = 0; i < n; i++) {
		struct epoll_event ev = { .events = EPOLLIN, .data.fd = fds[i] };
		epoll_ctl(ep, EPOLL_CTL_ADD, fds[i], &ev);
	}
	char buf[65536];
	struct epoll_event evs[256];
	while (open > 0) {
		int k = epoll_wait(ep, evs, 256, 1000);
		for (int j = 0; j < k; j++)
			if (read(evs[j].data.fd, buf, sizeof buf) <= 0) {
				epoll_ctl(ep, EPOLL_CTL_DEL, evs[j].data.fd, NULL);
				close(evs[j].data.fd);
				open--;
			}
	}
	_exit(0);
}

int main(int argc, char **argv)
{
	if (argc != 4)
		return fprintf(stderr, "usage: burst STREAMS STEPS STEP_MS\n"), 2;
	int n = atoi(argv[1]), steps = atoi(argv[2]);
	double step_s = atof(argv[3]) / 1000.0;
	if (n < 1 || steps < 1 || !(step_s >= 0))
		return fprintf(stderr, "burst: bad arguments\n"), 2;
	int ls = socket(AF_INET, SOCK_STREAM, 0), one = 1;
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t al = sizeof a;
	if (bind(ls, (struct sockaddr *)&a, sizeof a) < 0 || listen(ls, 4096) < 0 ||
	    getsockname(ls, (struct sockaddr *)&a, &al) < 0)
		return perror("burst: listen"), 1;
	int *cli = calloc((size_t)n, sizeof *cli), *srv = calloc((size_t)n, sizeof *srv);
	double *late = calloc((size_t)n * (size_t)steps, sizeof *late);
	if (!cli || !srv || !late)
		return fprintf(stderr, "burst: out of memory\n"), 1;
	for (int i = 0; i < n; i++) {
		cli[i] = socket(AF_INET, SOCK_STREAM, 0);
		if (cli[i] < 0 || connect(cli[i], (struct sockaddr *)&a, sizeof a) < 0 ||
		    (srv[i] = accept(ls, NULL, NULL)) < 0)
			return perror("burst: connect (raise ulimit -n?)"), 1;
		setsockopt(srv[i], IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
	}
	pid_t child = fork();
	if (child == 0) {
		for (int i = 0; i < n; i++)
			close(srv[i]);
		drain(cli, n);
	}
	for (int i = 0; i < n; i++)
		close(cli[i]);
	static const char chunk[] = "82\r\ndata: {\"id\":\"cmpl-0\",\"object\":\"text_completion\","
				    "\"created\":0,\"model\":\"m\",\"choices\":[{\"index\":0,"
				    "\"text\":\" word\",\"logprobs\":null}]}\n\n\r\n";
	size_t sends = 0;
	double busy = 0;
	for (int s = 0; s < steps; s++) {
		double t0 = now_s();
		for (int i = 0; i < n; i++) {
			if (send(srv[i], chunk, sizeof chunk - 1, MSG_DONTWAIT | MSG_NOSIGNAL) > 0)
				sends++;
			late[(size_t)s * (size_t)n + (size_t)i] = now_s() - t0;
		}
		double t1 = now_s();
		busy += t1 - t0;
		while (now_s() < t0 + step_s)
			usleep(200);
	}
	for (int i = 0; i < n; i++)
		close(srv[i]);
	waitpid(child, NULL, 0);
	size_t m = (size_t)n * (size_t)steps, in1 = 0;
	for (size_t i = 0; i < m; i++)
		in1 += late[i] <= 1e-3;
	qsort(late, m, sizeof *late, cmp);
	printf("streams=%d sends=%zu us_per_send=%.2f lateness_p50_ms=%.2f p99_ms=%.2f "
	       "within_1ms=%.4f\n", n, sends, busy / (double)m * 1e6, late[m / 2] * 1e3,
	       late[(size_t)((double)m * 0.99)] * 1e3, (double)in1 / (double)m);
	free(cli);
	free(srv);
	free(late);
	return 0;
}
