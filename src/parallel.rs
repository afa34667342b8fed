//! Independent items worked on over threads: the one way perfpipe spreads
//! CPU- or syscall-bound work over the cores it may use.

/// `work(0..n)`, in order, on up to `workers` threads (on this one when one
/// is enough). A panic in `work` panics here.
pub fn in_parallel<T: Send>(
    n: usize,
    workers: usize,
    work: &(dyn Fn(usize) -> T + Sync),
) -> Vec<T> {
    if workers <= 1 || n <= 1 {
        return (0..n).map(work).collect();
    }
    let per_worker = n.div_ceil(workers).max(1);
    std::thread::scope(|scope| {
        let parts: Vec<_> = (0..n)
            .step_by(per_worker)
            .map(|from| {
                let to = (from + per_worker).min(n);
                scope.spawn(move || (from..to).map(work).collect::<Vec<T>>())
            })
            .collect();
        parts
            .into_iter()
            .flat_map(|part| {
                part.join()
                    .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
            })
            .collect()
    })
}

/// The threads work on `n` items takes: every core this process may use,
/// once there are `from` items or more (fewer take less time than starting
/// the threads).
pub fn workers_for(n: usize, from: usize) -> usize {
    if n < from {
        return 1;
    }
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn items_come_back_in_order_however_many_threads_work_on_them() {
        for workers in [1, 2, 3, 8, 100] {
            for n in [0, 1, 2, 7, 64] {
                let squares = in_parallel(n, workers, &|i| i * i);
                assert_eq!(squares, (0..n).map(|i| i * i).collect::<Vec<_>>());
            }
        }
    }
}
