/* floor.c — the least CPU a client can spend per streamed token on this
 * machine: N keep-alive connections to the stub server, one thread, epoll,
 * one recv (or, with --stamp, one recvmsg carrying the kernel's arrival
 * time) per readable socket, and nothing else: no HTTP library, no SSE
 * parsing, no statistics. bench/floor.sh runs it beside `servebench run`
 * on the same load, so what the kernel costs and what servebench adds on
 * top of it can be told apart.
 *
 * usage: floor PORT STREAMS REQUESTS OUTPUT_LEN [--stamp]
 * prints: tokens=T cpu_user_s=U cpu_sys_s=S us_per_token=X
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

struct stream {
	int fd;
	char tail[8]; /* the last bytes seen: finds the end of a chunked body */
	size_t ntail;
};

static char request[512];
static size_t request_len;

static int send_request(int fd)
{
	return send(fd, request, request_len, MSG_NOSIGNAL) == (ssize_t)request_len ? 0 : -1;
}

/* Counts token events (" tok") in data and tells whether the response
 * ended (the chunked body's last chunk "\r\n0\r\n\r\n"). Tokens split
 * across reads are not a concern: the stub writes one event per write. */
static int scan(struct stream *s, const char *data, size_t n, long *tokens)
{
	for (const char *p = data; (p = memmem(p, (size_t)(data + n - p), "\" tok\"", 6)); p += 6)
		(*tokens)++;
	for (size_t i = 0; i < n; i++) {
		if (s->ntail == sizeof(s->tail))
			memmove(s->tail, s->tail + 1, --s->ntail);
		s->tail[s->ntail++] = data[i];
	}
	return s->ntail >= 7 && !memcmp(s->tail + s->ntail - 7, "\r\n0\r\n\r\n", 7);
}

int main(int argc, char **argv)
{
	if (argc < 5) {
		fprintf(stderr, "usage: floor PORT STREAMS REQUESTS OUTPUT_LEN [--stamp]\n");
		return 2;
	}
	int port = atoi(argv[1]), streams = atoi(argv[2]), requests = atoi(argv[3]);
	int out_len = atoi(argv[4]), stamp = argc > 5 && !strcmp(argv[5], "--stamp");
	char body[256];
	int blen = snprintf(body, sizeof body,
			    "{\"model\":\"stub-model\",\"stream\":true,\"max_tokens\":%d,"
			    "\"messages\":[{\"role\":\"user\",\"content\":\"a b c d\"}]}",
			    out_len);
	request_len = (size_t)snprintf(request, sizeof request,
				       "POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\n"
				       "Content-Type: application/json\r\nContent-Length: %d\r\n\r\n%s",
				       blen, body);
	int ep = epoll_create1(0);
	struct stream *ss = calloc((size_t)streams, sizeof(*ss));
	if (ep < 0 || !ss)
		return 1;
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	int sent = 0, done = 0, one = 1;
	for (int i = 0; i < streams && sent < requests; i++) {
		int fd = socket(AF_INET, SOCK_STREAM, 0);
		if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof a) < 0) {
			fprintf(stderr, "floor: connect: %s\n", strerror(errno));
			return 1;
		}
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
		if (stamp)
			setsockopt(fd, SOL_SOCKET, SO_TIMESTAMPNS, &one, sizeof one);
		ss[i].fd = fd;
		struct epoll_event ev = { .events = EPOLLIN, .data.ptr = &ss[i] };
		epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev);
		if (send_request(fd) < 0)
			return 1;
		sent++;
	}
	long tokens = 0;
	char buf[65536];
	struct epoll_event evs[512];
	while (done < requests) {
		int n = epoll_wait(ep, evs, 512, 10000);
		if (n <= 0) {
			fprintf(stderr, "floor: no data for 10 s (%d of %d requests done)\n", done, requests);
			return 1;
		}
		for (int i = 0; i < n; i++) {
			struct stream *s = evs[i].data.ptr;
			ssize_t got;
			if (stamp) {
				char ctl[CMSG_SPACE(sizeof(struct timespec))];
				struct iovec iov = { buf, sizeof buf };
				struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl,
						     .msg_controllen = sizeof ctl };
				got = recvmsg(s->fd, &mh, MSG_DONTWAIT);
			} else {
				got = recv(s->fd, buf, sizeof buf, MSG_DONTWAIT);
			}
			if (got <= 0) {
				if (got < 0 && errno == EAGAIN)
					continue;
				fprintf(stderr, "floor: the stub closed a connection\n");
				return 1;
			}
			if (scan(s, buf, (size_t)got, &tokens)) {
				done++;
				s->ntail = 0;
				if (sent < requests) {
					if (send_request(s->fd) < 0)
						return 1;
					sent++;
				}
			}
		}
	}
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	double u = (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec * 1e-6;
	double k = (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec * 1e-6;
	printf("tokens=%ld cpu_user_s=%.3f cpu_sys_s=%.3f us_per_token=%.2f\n", tokens, u, k,
	       tokens ? (u + k) * 1e6 / (double)tokens : 0.0);
	return 0;
}
