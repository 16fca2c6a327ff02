/* Function numbers shared by the reload workload and its two libraries. */
enum { T_main, T_plain, T_reload_work, T_reload_leaf, T_other_work, T_loading };
