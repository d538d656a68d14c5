/* std_streams.c: the programs' standard streams when one is closed at
 * start (`translate <&-`): the next file or pipe opened would take its
 * number, so the reader would read its own wake-up pipe or an error message
 * would go to a client's socket. Each closed one gets /dev/null instead. */
#include "options.h"

#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

int app_guard_std_streams(int closed[3])
{
    for (int fd = 0; fd < 3; fd++) {
        closed[fd] = fcntl(fd, F_GETFD) < 0 && errno == EBADF;
        if (!closed[fd])
            continue;
        /* open returns the lowest free number: this one, as the lower ones are open */
        const int null = open("/dev/null", fd == 0 ? O_RDONLY : O_WRONLY);
        if (null != fd) {
            if (null >= 0)
                close(null);
            return -1;
        }
    }
    return 0;
}
