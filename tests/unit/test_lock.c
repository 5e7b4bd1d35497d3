/* lock.c: the library's lock. Taken plainly on GIL builds and threads
 * without a thread state; on a free-threaded build, an attached thread that
 * finds it taken waits detached and holds it only attached. CPython is three
 * fakes here: a thread state, and detach/attach that record what they saw. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "lock.h"
#include "state.h"

static struct pi_state st = {.lock = PTHREAD_MUTEX_INITIALIZER};
static int fake_tstate;
static _Atomic int attached; /* this test thread's state: 1 attached */
static _Atomic int detaches, attaches;

static void *fake_get_tstate(void) { return atomic_load(&attached) ? &fake_tstate : NULL; }

static void *fake_save_thread(void)
{
    assert_true(atomic_load(&attached));
    atomic_store(&attached, 0);
    atomic_fetch_add(&detaches, 1);
    return &fake_tstate;
}

static void fake_restore_thread(void *tstate)
{
    assert_ptr_equal(tstate, &fake_tstate);
    assert_false(atomic_load(&attached));
    atomic_store(&attached, 1);
    atomic_fetch_add(&attaches, 1);
}

static int setup(void **state)
{
    (void)state;
    st.py.ThreadStateGet = fake_get_tstate;
    st.py.SaveThread = fake_save_thread;
    st.py.RestoreThread = fake_restore_thread;
    st.py.free_threaded = 1;
    atomic_store(&attached, 1);
    atomic_store(&detaches, 0);
    atomic_store(&attaches, 0);
    return 0;
}

static void sleep_ms(long ms)
{
    struct timespec ts = {0, ms * 1000000L};
    nanosleep(&ts, NULL);
}

/* Another thread takes the lock, holds it for a while, then lets go. */
static _Atomic int holding;

static void *holder(void *arg)
{
    long ms = (long)(intptr_t)arg;
    pthread_mutex_lock(&st.lock);
    atomic_store(&holding, 1);
    sleep_ms(ms);
    pthread_mutex_unlock(&st.lock);
    return NULL;
}

static pthread_t hold_for(long ms)
{
    pthread_t t;
    atomic_store(&holding, 0);
    assert_int_equal(pthread_create(&t, NULL, holder, (void *)(intptr_t)ms), 0);
    while (!atomic_load(&holding))
        sleep_ms(1);
    return t;
}

static void test_free_lock_is_taken_without_detaching(void **state)
{
    (void)state;
    pi_lock(&st);
    assert_int_equal(pthread_mutex_trylock(&st.lock), EBUSY);
    pi_unlock(&st);
    assert_int_equal(atomic_load(&detaches), 0);
}

static void test_taken_lock_is_awaited_detached_on_free_threaded(void **state)
{
    (void)state;
    pthread_t t = hold_for(50);
    pi_lock(&st);
    assert_true(atomic_load(&attached)); /* holds it attached */
    assert_true(atomic_load(&detaches) >= 1);
    assert_int_equal(atomic_load(&attaches), atomic_load(&detaches));
    assert_int_equal(pthread_mutex_trylock(&st.lock), EBUSY);
    pi_unlock(&st);
    pthread_join(t, NULL);
}

/* Waits for a lock another thread holds without ever detaching. */
static void assert_waits_plainly(void)
{
    pthread_t t = hold_for(30);
    pi_lock(&st);
    assert_int_equal(atomic_load(&detaches), 0);
    pi_unlock(&st);
    pthread_join(t, NULL);
}

static void test_gil_build_waits_plainly(void **state)
{
    (void)state;
    st.py.free_threaded = 0;
    assert_waits_plainly();
}

static void test_thread_without_state_waits_plainly(void **state)
{
    (void)state;
    atomic_store(&attached, 0); /* a thread CPython does not know, or detached */
    assert_waits_plainly();
}

static void test_before_symbols_are_resolved(void **state)
{
    (void)state;
    st.py.SaveThread = NULL; /* pi_state before start-up: a plain lock */
    assert_waits_plainly();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(test_free_lock_is_taken_without_detaching, setup),
        cmocka_unit_test_setup(test_taken_lock_is_awaited_detached_on_free_threaded, setup),
        cmocka_unit_test_setup(test_gil_build_waits_plainly, setup),
        cmocka_unit_test_setup(test_thread_without_state_waits_plainly, setup),
        cmocka_unit_test_setup(test_before_symbols_are_resolved, setup),
    };
    return cmocka_run_group_tests_name("lock", tests, NULL, NULL);
}
