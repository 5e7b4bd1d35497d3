/* The public API (include/pyperfinject.h): thin entry points over control.c
 * and backends.c. */
#include "pyperfinject.h"

#include "control.h"
#include "inject.h"
#include "lock.h"
#include "state.h"

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

API int pyperfinject_attach(const char *settings, int flags, char *why, unsigned long whylen)
{
    char scratch[256];
    if (why == NULL || whylen == 0)
        why = scratch, whylen = sizeof scratch;
    enum pi_attach_caller caller = PI_CALLER_PYTHON;
    if (flags & PYPERFINJECT_ATTACH_FROM_OUTSIDE)
        caller = flags & PYPERFINJECT_ATTACH_WAITING_THREAD ? PI_CALLER_WAITING_THREAD
                                                            : PI_CALLER_ANYWHERE;
    return pi_attach_running(settings, caller, why, whylen);
}

API int pyperfinject_flush(void)
{
    struct pi_state *s = &pi_state;
    if (!pi_is_active())
        return -1;
    pi_lock(s);
    int rc = pi_backends_flush(&s->backends);
    pi_unlock(s);
    return rc;
}
