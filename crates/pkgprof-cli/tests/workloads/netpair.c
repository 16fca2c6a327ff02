/* Loopback network workloads whose receive work has a known owner, for pkgmon --async:
 *
 *   netpair udp  SECONDS PIDFILE   one sender, one receiver that does nothing but recv
 *   netpair tcp  SECONDS PIDFILE   the same over a TCP connection
 *   netpair udp2 SECONDS PIDFILE   one sender, two receivers fed 1:3 by bytes
 *   netpair stream SECONDS PIDFILE [RATE]
 *                                  a TCP stream of 64 KiB writes (benches/async-overhead.sh),
 *                                  paced at RATE bytes/s if given (SO_MAX_PACING_RATE);
 *                                  PIDFILE also gets "bytes N", the bytes sent
 *   netpair flood SECONDS PIDFILE [EVERY_US [RATE]]
 *                                  a UDP flood of 100-byte datagrams, as fast as the sender
 *                                  can send or RATE a second, to a socket nobody reads (the
 *                                  sender holds it open), or, with EVERY_US > 0, that a
 *                                  receiver reads one datagram of every EVERY_US microseconds
 *                                  (a small share: the rest is dropped for a full receive
 *                                  buffer); PIDFILE also gets "sent N"
 *   netpair udp SECONDS PIDFILE NS_SEND NS_RECV ADDR
 *                                  udp between two network namespaces (`ip netns` names): the
 *                                  receiver's socket is made in NS_RECV bound to ADDR, the
 *                                  sender's in NS_SEND (both processes then run in NS_SEND; a
 *                                  socket stays in the namespace it was made in)
 * The process started is the sender; it forks the receivers, which only read. PIDFILE gets
 * "sender PID" and "receiver PID" lines (the first receiver is fed 1, the second 3). UDP is
 * paced by a pipe (each receiver acknowledges every 16 datagrams) so that no datagram is
 * dropped for a full receive buffer: every packet has a reader. In udp2 the sender waits,
 * before each datagram, until its receiver is asleep (state S in /proc/PID/stat: it sleeps
 * nowhere but in recv, and only on an empty queue), so that every datagram finds its receiver
 * asleep on an empty queue and costs the kernel the same whichever receiver it is for: the
 * work is then 1:3 by construction. (Acknowledging each datagram is not enough: the sender
 * may send the next before the receiver is back in recv, and a datagram that finds its
 * receiver still running skips the wake-up. The receiver fed three times as often found
 * itself running more often, and its datagrams cost the kernel a third less.) Which datagram
 * of each four goes to the first receiver is drawn at random, so that the pattern is not
 * periodic (see udp()).
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "loopback.h"

#define SIZE 1000
#define WINDOW 64

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec / 1e9;
}

/* The network namespaces of udp between namespaces, and the receiver's address. */
static const char *ns_send, *ns_recv, *recv_addr;

/* Enters network namespace `name` (made by `ip netns add`), if any. */
static void enter(const char *name) {
    if (!name)
        return;
    char path[256];
    snprintf(path, sizeof path, "/var/run/netns/%s", name);
    int fd = open(path, O_RDONLY);
    if (fd < 0 || setns(fd, CLONE_NEWNET)) {
        perror(path);
        exit(1);
    }
    close(fd);
}

static int udp_bound(struct sockaddr_in *addr) {
    enter(ns_recv);
    int s = socket(AF_INET, SOCK_DGRAM, 0);
    memset(addr, 0, sizeof *addr);
    addr->sin_family = AF_INET;
    addr->sin_addr.s_addr = recv_addr ? inet_addr(recv_addr) : htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof *addr;
    if (s < 0 || bind(s, (struct sockaddr *)addr, len) || getsockname(s, (struct sockaddr *)addr, &len)) {
        perror("udp socket");
        exit(1);
    }
    enter(ns_send);
    return s;
}

/* A UDP receiver: reads until a 1-byte datagram, acknowledging every `every` (0: never) on
 * `ack`. */
static void udp_receiver(int s, int ack, int every) {
    char buf[65536];
    for (long n = 1;; n++) {
        ssize_t r = recv(s, buf, sizeof buf, 0);
        if (r <= 1)
            _exit(0);
        if (every && n % every == 0 && write(ack, "a", 1) != 1)
            _exit(1);
    }
}

/* Whether the process whose /proc/PID/stat is open as `stat` is asleep (state S). */
static int asleep(int stat) {
    char b[512];
    ssize_t n = pread(stat, b, sizeof b - 1, 0);
    if (n <= 0) {
        perror("pread stat");
        exit(1);
    }
    b[n] = 0;
    char *p = strrchr(b, ')');
    return p && p[1] == ' ' && p[2] == 'S';
}

static void udp(int receivers, double seconds, FILE *pids) {
    /* Datagrams acknowledged at a time (none with two receivers: the sender waits for the
     * receiver to sleep instead), and sent ahead of their acknowledgement. */
    int every = receivers == 1 ? 16 : 0;
    struct sockaddr_in addr[2];
    int acks[2][2], stat[2];
    pid_t kids[2];
    if (receivers == 2) {
        /* All on the CPU the sender runs on, inherited by the receivers: a wake-up on another
         * CPU costs more (an interrupt to it) and the scheduler places each receiver its own
         * way, so the two would not cost the same. */
        cpu_set_t one;
        CPU_ZERO(&one);
        CPU_SET(sched_getcpu(), &one);
        if (sched_setaffinity(0, sizeof one, &one)) {
            perror("sched_setaffinity");
            exit(1);
        }
    }
    for (int i = 0; i < receivers; i++) {
        int s = udp_bound(&addr[i]);
        if (pipe(acks[i])) {
            perror("pipe");
            exit(1);
        }
        kids[i] = fork();
        if (kids[i] == 0) {
            close(acks[i][0]);
            udp_receiver(s, acks[i][1], every);
        }
        close(s);
        close(acks[i][1]);
        char path[64];
        snprintf(path, sizeof path, "/proc/%d/stat", kids[i]);
        stat[i] = open(path, O_RDONLY);
        if (stat[i] < 0) {
            perror(path);
            exit(1);
        }
        fprintf(pids, "receiver %d\n", kids[i]);
    }
    fflush(pids);
    int out = socket(AF_INET, SOCK_DGRAM, 0);
    char buf[SIZE];
    memset(buf, 'x', sizeof buf);
    long sent[2] = {0, 0}, acked[2] = {0, 0};
    double end = now() + seconds;
    /* With two receivers, one datagram of every four goes to the first, at a place in the four
     * drawn anew each time (a fixed-seed xorshift): a fixed place makes the pattern periodic,
     * and the periodic cpu-clock timer can lock onto it and over- or under-sample the first
     * receiver's datagrams for a whole run (its share ranged 0.19-0.29 over 17 runs). */
    unsigned long seed = 88172645463325252UL;
    int first = 0;
    for (long k = 0; now() < end; k++) {
        if (k % 4 == 0) {
            seed ^= seed << 13, seed ^= seed >> 7, seed ^= seed << 17;
            first = (int)(seed % 4);
        }
        int i = receivers == 1 ? 0 : (k % 4 == first ? 0 : 1);
        while (receivers == 2 && !asleep(stat[i]))
            sched_yield();
        while (receivers == 1 && sent[i] - acked[i] >= WINDOW) {
            char a[64];
            ssize_t r = read(acks[i][0], a, sizeof a);
            if (r <= 0)
                exit(1);
            acked[i] += every * r;
        }
        if (sendto(out, buf, SIZE, 0, (struct sockaddr *)&addr[i], sizeof addr[i]) != SIZE) {
            perror("sendto");
            exit(1);
        }
        sent[i]++;
    }
    for (int i = 0; i < receivers; i++) {
        sendto(out, "!", 1, 0, (struct sockaddr *)&addr[i], sizeof addr[i]);
        waitpid(kids[i], NULL, 0);
    }
}

/* A UDP flood (a hostile or broken peer): datagrams nobody reads, or of which a receiver reads
 * one every `every_us` microseconds. Each datagram is received in the softirq of the sender's
 * own send: a window and a packet for pkgmon --async to keep track of. */
static void flood(double seconds, FILE *pids, long every_us, long rate) {
    struct sockaddr_in addr;
    int in = udp_bound(&addr);
    int out = socket(AF_INET, SOCK_DGRAM, 0);
    if (out < 0) {
        perror("udp socket");
        exit(1);
    }
    pid_t kid = -1;
    if (every_us > 0) {
        kid = fork();
        if (kid == 0) {
            char buf[65536];
            struct timespec pause = {every_us / 1000000, every_us % 1000000 * 1000};
            for (;;) {
                if (recv(in, buf, sizeof buf, 0) <= 1)
                    _exit(0);
                nanosleep(&pause, NULL);
            }
        }
        fprintf(pids, "receiver %d\n", kid);
        fflush(pids);
    }
    static char buf[100];
    memset(buf, 'x', sizeof buf);
    long long sent = 0;
    double start = now(), end = start + seconds;
    struct timespec ms = {0, 1000000};
    for (double t = start; t < end; t = now()) {
        if (rate > 0 && sent >= (t - start) * rate) {
            nanosleep(&ms, NULL);
            continue;
        }
        for (int i = 0; i < 64; i++)
            sent += sendto(out, buf, sizeof buf, 0, (struct sockaddr *)&addr, sizeof addr) > 0;
    }
    fprintf(pids, "sent %lld\n", sent);
    if (kid > 0) {
        /* The end mark may be dropped for a full queue: the receiver is killed instead. */
        sendto(out, "!", 1, 0, (struct sockaddr *)&addr, sizeof addr);
        kill(kid, SIGKILL);
        waitpid(kid, NULL, 0);
    }
    close(in);
}

/* `size`: bytes per send; small ones go out at once (TCP_NODELAY). */
/* The pacing rate of stream mode, bytes/s (0: none). */
static unsigned pace;

static void tcp(double seconds, FILE *pids, size_t size) {
    struct sockaddr_in addr;
    pid_t kid = loopback_reader(&addr);
    fprintf(pids, "receiver %d\n", kid);
    fflush(pids);
    int s = socket(AF_INET, SOCK_STREAM, 0);
    int one = 1;
    if (connect(s, (struct sockaddr *)&addr, sizeof addr) ||
        (size == SIZE && setsockopt(s, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one)) ||
        (pace && setsockopt(s, SOL_SOCKET, SO_MAX_PACING_RATE, &pace, sizeof pace))) {
        perror("connect");
        exit(1);
    }
    /* In tcp mode, small segments sent at once: each is received in the softirq of the
     * sender's own send (large writes would be sent from the receiver's softirq instead, as
     * its window updates arrive: its own work, already). */
    static char buf[1 << 16];
    memset(buf, 'x', sizeof buf);
    long long bytes = 0;
    double end = now() + seconds;
    while (now() < end) {
        ssize_t n = send(s, buf, size, 0);
        if (n <= 0) {
            perror("send");
            exit(1);
        }
        bytes += n;
    }
    fprintf(pids, "bytes %lld\n", bytes);
    close(s);
    waitpid(kid, NULL, 0);
}

int main(int argc, char **argv) {
    if (argc == 7 && !strcmp(argv[1], "udp")) {
        ns_send = argv[4];
        ns_recv = argv[5];
        recv_addr = argv[6];
    } else if (argc == 5 && !strcmp(argv[1], "stream")) {
        pace = (unsigned)strtoul(argv[4], NULL, 10);
    } else if ((argc == 5 || argc == 6) && !strcmp(argv[1], "flood")) {
    } else if (argc != 4) {
        fprintf(stderr, "usage: netpair udp|tcp|udp2|stream|flood SECONDS PIDFILE [NS_SEND NS_RECV ADDR | RATE | EVERY_US [RATE]]\n");
        return 2;
    }
    double seconds = atof(argv[2]);
    FILE *pids = fopen(argv[3], "w");
    if (!pids) {
        perror(argv[3]);
        return 1;
    }
    fprintf(pids, "sender %d\n", getpid());
    if (!strcmp(argv[1], "udp"))
        udp(1, seconds, pids);
    else if (!strcmp(argv[1], "udp2"))
        udp(2, seconds, pids);
    else if (!strcmp(argv[1], "tcp"))
        tcp(seconds, pids, SIZE);
    else if (!strcmp(argv[1], "stream"))
        tcp(seconds, pids, sizeof(char[1 << 16]));
    else if (!strcmp(argv[1], "flood"))
        flood(seconds, pids, argc >= 5 ? atol(argv[4]) : 0, argc == 6 ? atol(argv[5]) : 0);
    else
        return 2;
    fclose(pids);
    return 0;
}
