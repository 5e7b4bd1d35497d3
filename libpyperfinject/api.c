/* The public API (include/pyperfinject.h): thin entry points over control.c. */
#include "pyperfinject.h"

#include "control.h"
#include "state.h"

#include <unistd.h>

#define API __attribute__((visibility("default")))

API int pyperfinject_api_version(void) { return PYPERFINJECT_API_VERSION; }

API const char *pyperfinject_version(void) { return PI_VERSION; }

API int pyperfinject_state(void)
{
    if (!pi_is_active())
        return PYPERFINJECT_INACTIVE;
    return pi_control_is_on(&pi_state) ? PYPERFINJECT_ON : PYPERFINJECT_OFF;
}

API int pyperfinject_enable(void)
{
    if (!pi_is_active())
        return -1;
    pi_control_request(&pi_state, 1);
    return 0;
}

API int pyperfinject_disable(void)
{
    if (!pi_is_active())
        return -1;
    pi_control_request(&pi_state, 0);
    return 0;
}

API int pyperfinject_flush(void)
{
    struct pi_state *s = &pi_state;
    if (!pi_is_active())
        return -1;
    int rc = 0;
    pthread_mutex_lock(&s->lock);
    if (s->perfmap.fd >= 0 && fdatasync(s->perfmap.fd) != 0)
        rc = -1;
    if (s->jitdump.fd >= 0 && fdatasync(s->jitdump.fd) != 0)
        rc = -1;
    pthread_mutex_unlock(&s->lock);
    return rc;
}
