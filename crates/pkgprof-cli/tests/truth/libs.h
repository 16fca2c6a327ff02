/* Function numbers shared by the libs workload and its two libraries. */
enum { T_main, T_plain, T_lib_compute, T_lib_inner, T_dl_compute, T_dl_leaf, T_writer };
