/* Runs another program through posix_spawn (a child on a stack of its own until its exec) and
 * waits for it: spawner PROGRAM [ARGS...] */
#include <spawn.h>
#include <sys/wait.h>
extern char **environ;
int main(int argc, char **argv) {
    pid_t pid;
    int status;
    if (argc < 2 || posix_spawn(&pid, argv[1], 0, 0, argv + 1, environ) != 0) return 2;
    return waitpid(pid, &status, 0) == pid && WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}
