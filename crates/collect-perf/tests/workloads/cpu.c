/* CPU-bound loop: cpu MS */
#include "common.h"
int main(int argc, char **argv) { spin(argc > 1 ? atof(argv[1]) : 500); return 0; }
