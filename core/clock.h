/* clock.h: monotonic seconds, the one clock the library times itself by
 * (decode and start-up times, the service's deadlines). */
#ifndef NMT_CORE_CLOCK_H
#define NMT_CORE_CLOCK_H

#include <time.h>

static inline double nmt_clock_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

#endif /* NMT_CORE_CLOCK_H */
