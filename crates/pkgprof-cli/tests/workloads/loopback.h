/* A TCP reader on loopback, shared by the workloads that stream to one (netpair, deferred). */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

/* Listens on a free loopback port, forks a reader that accepts one connection and reads it to
 * its end, and returns the reader's pid; `addr` is the address to connect to. */
static pid_t loopback_reader(struct sockaddr_in *addr) {
    memset(addr, 0, sizeof *addr);
    addr->sin_family = AF_INET;
    addr->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof *addr;
    int l = socket(AF_INET, SOCK_STREAM, 0);
    if (l < 0 || bind(l, (struct sockaddr *)addr, len) || listen(l, 1) ||
        getsockname(l, (struct sockaddr *)addr, &len)) {
        perror("tcp listen");
        exit(1);
    }
    pid_t reader = fork();
    if (reader == 0) {
        int c = accept(l, NULL, NULL);
        static char buf[1 << 16];
        while (recv(c, buf, sizeof buf, 0) > 0)
            ;
        _exit(0);
    }
    close(l);
    return reader;
}
