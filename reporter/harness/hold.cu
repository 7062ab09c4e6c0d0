// A one-thread kernel that holds its stream until the host releases it (see hold.py).
//
// The host writes 0 to a pinned (device-visible) flag, queues this kernel, queues the timed
// work, then writes 1. Until then the GPU spins here, so the timed work starts only once all of
// it has been queued: the time the host spends launching it is no longer inside the event pair.
// The %globaltimer clock bounds the wait: past timeout_ns the kernel gives up, writes 1 to
// *timed_out and returns, so a callable that waits for the GPU from the host cannot deadlock.
extern "C" __global__ void hold_stream(const volatile int* flag, int* timed_out,
                                       unsigned long long timeout_ns) {
    unsigned long long t0, t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
    while (*flag == 0) {
        asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
        if (t - t0 > timeout_ns) {
            *timed_out = 1;
            return;
        }
        __nanosleep(500);
    }
}
