// What OpenMP's wait policy costs, under the environment it runs with (GOMP_SPINCOUNT,
// OMP_WAIT_POLICY; the server sets them from compute_spin_count: tools/server/compute_pool.hpp).
// Two figures per run:
//   idle spin: CPU time the pool's idle threads burn per gap between regions (a decode step
//     ends, the batcher plans the next: ~1 ms of gap), which the control plane does not get;
//   region cost: wall time of an empty parallel region right after another (the gaps inside a
//     step), which a sleeping pool pays as a futex wake-up.
//   GOMP_SPINCOUNT=N ./omp_wait [--threads T] [--gap-us G] [--regions R]
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>

#include <omp.h>
#include <sys/resource.h>

namespace {

double cpu_seconds() {
    rusage u{};
    getrusage(RUSAGE_SELF, &u);
    return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
           static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec) * 1e-6;
}

} // namespace

int main(int argc, char** argv) {
    int threads = omp_get_num_procs();
    int gap_us = 1000;
    int regions = 2000;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!std::strcmp(argv[i], "--threads"))
            threads = std::atoi(argv[i + 1]);
        else if (!std::strcmp(argv[i], "--gap-us"))
            gap_us = std::atoi(argv[i + 1]);
        else if (!std::strcmp(argv[i], "--regions"))
            regions = std::atoi(argv[i + 1]);
    }
    volatile int sink = 0;
    auto region = [&] {
#pragma omp parallel num_threads(threads)
        { sink = sink + omp_get_thread_num(); }
    };
    region(); // the pool starts
    // Idle spin: regions separated by sleeps of the main thread.
    const double c0 = cpu_seconds();
    for (int i = 0; i < regions / 4; ++i) {
        region();
        std::this_thread::sleep_for(std::chrono::microseconds(gap_us));
    }
    const double idle_ms = (cpu_seconds() - c0) * 1000.0 / (regions / 4);
    // Region cost: back to back.
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < regions; ++i)
        region();
    const double region_us =
        std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count() /
        regions;
    const char* spin = std::getenv("GOMP_SPINCOUNT");
    const char* policy = std::getenv("OMP_WAIT_POLICY");
    std::printf("GOMP_SPINCOUNT=%s OMP_WAIT_POLICY=%s threads=%d gap=%d us: CPU per gap %.3f ms "
                "(the gap itself is %.3f ms), back-to-back region %.2f us\n",
                spin ? spin : "(unset)", policy ? policy : "(unset)", threads, gap_us, idle_ms,
                gap_us / 1000.0, region_us);
    return 0;
}
