/*
 * What a hostile sandboxed command does to the runner's usage walker: swaps two names of a
 * directory with renameat2(RENAME_EXCHANGE), COUNT times, PAUSE_US microseconds apart. After each
 * swap the name that holds the directory now gets MODE (a directory its owner cannot read, so a
 * walker that is not root takes its chmod path). Prints the number of swaps done.
 *
 *   rename-exchange A B COUNT PAUSE_US MODE(octal)
 *
 * Node cannot call renameat2; the race test compiles this with cc at test time.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef RENAME_EXCHANGE
#define RENAME_EXCHANGE (1 << 1)
#endif

int main(int argc, char **argv) {
  if (argc != 6) {
    fprintf(stderr, "usage: %s A B COUNT PAUSE_US MODE\n", argv[0]);
    return 2;
  }
  long count = atol(argv[3]);
  long pause_us = atol(argv[4]);
  mode_t mode = (mode_t)strtol(argv[5], NULL, 8);
  long done = 0;
  for (long i = 0; i < count; i++) {
    if (syscall(SYS_renameat2, AT_FDCWD, argv[1], AT_FDCWD, argv[2], RENAME_EXCHANGE) != 0) {
      perror("renameat2");
      return 1;
    }
    done++;
    /* The directory started at A: after an odd number of swaps it is at B. */
    const char *dir = (done % 2 == 1) ? argv[2] : argv[1];
    if (fchmodat(AT_FDCWD, dir, mode, 0) != 0) {
      perror("fchmodat");
      return 1;
    }
    if (pause_us > 0) usleep((useconds_t)pause_us);
  }
  printf("%ld\n", done);
  return 0;
}
