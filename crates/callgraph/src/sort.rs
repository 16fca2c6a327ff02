//! glibc's `qsort`, which gprof uses for every ordering it prints.
//!
//! glibc 2.36 sorts with a top-down merge sort that takes the left element whenever the
//! comparator says "less or equal". For a consistent comparator that is just a stable sort, but
//! gprof's comparators are not always consistent (NaN times, and the call graph's cycle-header
//! rule), and then only this exact merge sequence reproduces its order.

use std::cmp::Ordering;

/// Sorts `items` exactly as glibc's merge-sort `qsort` would with comparator `cmp`.
pub(crate) fn glibc_qsort<T: Clone, F: FnMut(&T, &T) -> Ordering>(items: &mut [T], mut cmp: F) {
    if items.len() <= 1 {
        return;
    }
    let mut scratch = items.to_vec();
    merge_sort(items, &mut scratch, &mut cmp);
}

/// Sorts `items` as [`glibc_qsort`] would, using the library's stable sort when `consistent`
/// is true.
///
/// With a comparator that is a total preorder on the items, glibc's merge sort is simply a
/// stable sort, and the library's is several times faster. Callers pass `consistent` = false
/// whenever their inputs could make the comparator inconsistent (NaN times, tied cycle
/// headers), and then get glibc's exact merge sequence.
pub(crate) fn glibc_qsort_fast<T: Clone, F: FnMut(&T, &T) -> Ordering>(
    items: &mut [T],
    consistent: bool,
    mut cmp: F,
) {
    if consistent {
        items.sort_by(|a, b| cmp(a, b));
    } else {
        glibc_qsort(items, cmp);
    }
}

fn merge_sort<T: Clone, F: FnMut(&T, &T) -> Ordering>(
    items: &mut [T],
    scratch: &mut [T],
    cmp: &mut F,
) {
    let n = items.len();
    if n <= 1 {
        return;
    }
    let n1 = n / 2;
    {
        let (left, right) = items.split_at_mut(n1);
        let (sl, sr) = scratch.split_at_mut(n1);
        merge_sort(left, sl, cmp);
        merge_sort(right, sr, cmp);
    }
    let (mut i, mut j, mut k) = (0, n1, 0);
    while i < n1 && j < n {
        if cmp(&items[i], &items[j]) != Ordering::Greater {
            scratch[k] = items[i].clone();
            i += 1;
        } else {
            scratch[k] = items[j].clone();
            j += 1;
        }
        k += 1;
    }
    // Whatever remains of the right run is already in place; only the left run's tail moves.
    let tail = n1 - i;
    scratch[k..k + tail].clone_from_slice(&items[i..n1]);
    k += tail;
    items[..k].clone_from_slice(&scratch[..k]);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stable_for_consistent_comparators() {
        let mut v: Vec<(u32, usize)> = [3, 1, 3, 2, 1, 3, 0, 2]
            .iter()
            .enumerate()
            .map(|(i, &k)| (k, i))
            .collect();
        let mut expected = v.clone();
        expected.sort_by_key(|&(k, _)| k);
        glibc_qsort(&mut v, |a, b| a.0.cmp(&b.0));
        assert_eq!(v, expected);
    }

    #[test]
    fn inconsistent_comparator_follows_the_merge_sequence() {
        // "Left is always less": the merge keeps every left run before the right run, so the
        // input order survives.
        let mut v = vec![5, 4, 3, 2, 1];
        glibc_qsort(&mut v, |_, _| Ordering::Less);
        assert_eq!(v, [5, 4, 3, 2, 1]);
        // "Left is always greater": each merge puts the right run first. n=5 splits 2+3, the 3
        // splits 1+2.
        let mut v = vec![1, 2, 3, 4, 5];
        glibc_qsort(&mut v, |_, _| Ordering::Greater);
        assert_eq!(v, [5, 4, 3, 2, 1]);
    }
}
