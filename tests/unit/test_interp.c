/* interp.c, the switch: install (and chaining), leave and rejoin, yield to
 * CPython's trampoline, routes for interpreters that differ, forgetting at
 * finalisation. CPython is a few fakes here: interpreters are structs whose
 * eval-frame field the setter functions read and write. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "interp.h"
#include "state.h"

struct fake_interp {
    int64_t id;
    void *eval_frame;
};

static long next_index;
static int index_requests;

static int64_t fake_get_id(void *interp) { return ((struct fake_interp *)interp)->id; }
static void *fake_get_eval(void *interp) { return ((struct fake_interp *)interp)->eval_frame; }
static void fake_set_eval(void *interp, void *fn) { ((struct fake_interp *)interp)->eval_frame = fn; }
static pi_ssize_t fake_request_index(void (*freefunc)(void *))
{
    (void)freefunc;
    index_requests++;
    return next_index++;
}
static void fake_err_clear(void) {}

/* Stand-ins with addresses in this program, as dladdr() sees them. */
static __attribute__((noinline)) void fake_default_eval(void) { __asm__ volatile(""); }
static __attribute__((noinline)) void fake_our_hook(void) { __asm__ volatile(""); }
static __attribute__((noinline)) void fake_other_pep523(void) { __asm__ volatile(""); }

static int setup(void **state)
{
    (void)state;
    struct pi_state *s = &pi_state;
    memset(&s->records, 0, sizeof s->records);
    s->nrecords = 0;
    free(atomic_exchange(&s->installed_ids, NULL)); /* the library never frees one */
    atomic_store(&s->installed_words, 0);
    atomic_store(&s->hot.attention, 0);
    atomic_store(&s->coexist_pending, 0);
    s->replacement_reported = 0;
    atomic_store(&s->settled_interp, NULL);
    assert_int_equal(pi_abi_lookup(3, 12, 0, &s->abi), 0); /* setter install, NULL = default */
    s->py.InterpreterGetID = fake_get_id;
    s->py.GetEvalFrameFunc = fake_get_eval;
    s->py.SetEvalFrameFunc = fake_set_eval;
    s->py.RequestCodeExtraIndex = fake_request_index;
    s->py.ErrClear = fake_err_clear;
    s->py.EvalFrameDefault = (void *)fake_default_eval;
    s->hook = (void *)fake_our_hook;
    next_index = 0;
    index_requests = 0;
    return 0;
}

static struct pi_interp_record *record(void *interp)
{
    for (unsigned i = 0; i < pi_state.nrecords; i++)
        if (pi_state.records[i].interp == interp)
            return &pi_state.records[i];
    return NULL;
}

static int attention(void) { return atomic_load(&pi_state.hot.attention); }

static void test_install_puts_the_hook_in_front_of_the_default(void **state)
{
    (void)state;
    struct fake_interp main_interp = {0, NULL};
    pi_interp_install(&pi_state, &main_interp);
    assert_ptr_equal(main_interp.eval_frame, fake_our_hook);
    struct pi_interp_record *r = record(&main_interp);
    assert_non_null(r);
    assert_int_equal(r->state, PI_INTERP_HOOKED);
    assert_ptr_equal(r->next_eval, fake_default_eval);
    assert_ptr_equal(atomic_load(&pi_state.hot.next_eval), fake_default_eval);
    assert_int_equal(atomic_load(&pi_state.hot.extra_index), 0);
    /* 3.12 has a trampoline of its own: coexist.c has one interpreter to see. */
    assert_int_equal(atomic_load(&pi_state.coexist_pending), 1);
    /* Again: nothing changes, no second code-extra index. */
    pi_interp_install(&pi_state, &main_interp);
    assert_int_equal(index_requests, 1);
    assert_int_equal(pi_state.nrecords, 1);
}

static void test_install_chains_to_an_earlier_pep523_function(void **state)
{
    (void)state;
    struct fake_interp interp = {0, (void *)fake_other_pep523};
    pi_interp_install(&pi_state, &interp);
    assert_ptr_equal(interp.eval_frame, fake_our_hook);
    assert_ptr_equal(record(&interp)->next_eval, fake_other_pep523);
    assert_ptr_equal(atomic_load(&pi_state.hot.next_eval), fake_other_pep523);
}

static void test_install_leaves_a_field_that_is_not_code(void **state)
{
    (void)state;
    char *not_code = malloc(16); /* in no loaded object: a wrong offset, say */
    assert_non_null(not_code);
    struct fake_interp interp = {0, not_code};
    pi_interp_install(&pi_state, &interp);
    assert_ptr_equal(interp.eval_frame, not_code);
    assert_int_equal(record(&interp)->state, PI_INTERP_YIELDED);
    free(not_code);
}

static void test_leave_and_rejoin(void **state)
{
    (void)state;
    struct fake_interp a = {0, NULL}, b = {1, (void *)fake_default_eval};
    pi_interp_install(&pi_state, &a);
    pi_interp_install(&pi_state, &b);
    /* Leaving is only for switched-off interpreters. */
    pi_interp_leave(&pi_state, &a);
    assert_ptr_equal(a.eval_frame, fake_our_hook);
    pi_attention_raise(&pi_state, PI_ATTN_OFF);
    pi_interp_leave(&pi_state, &a);
    pi_interp_leave(&pi_state, &b);
    assert_ptr_equal(a.eval_frame, fake_default_eval);
    assert_int_equal(record(&a)->state, PI_INTERP_LEFT);
    /* Still off: rejoining does nothing. */
    pi_interp_rejoin_all(&pi_state);
    assert_ptr_equal(a.eval_frame, fake_default_eval);
    pi_attention_lower(&pi_state, PI_ATTN_OFF);
    pi_interp_rejoin_all(&pi_state);
    assert_ptr_equal(a.eval_frame, fake_our_hook);
    assert_ptr_equal(b.eval_frame, fake_our_hook);
    assert_int_equal(record(&b)->state, PI_INTERP_HOOKED);
}

static void test_an_interpreter_started_switched_off_waits(void **state)
{
    (void)state;
    struct fake_interp a = {0, NULL};
    pi_attention_raise(&pi_state, PI_ATTN_OFF);
    pi_interp_install(&pi_state, &a);
    assert_null(a.eval_frame);
    assert_int_equal(record(&a)->state, PI_INTERP_LEFT);
    pi_attention_lower(&pi_state, PI_ATTN_OFF);
    pi_interp_rejoin_all(&pi_state);
    assert_ptr_equal(a.eval_frame, fake_our_hook);
}

static void test_yield_to_cpython_and_back(void **state)
{
    (void)state;
    struct fake_interp a = {0, NULL};
    pi_interp_install(&pi_state, &a);
    assert_int_equal(pi_interp_yield(&pi_state, &a, 1), 1);
    assert_ptr_equal(a.eval_frame, fake_default_eval);
    assert_int_equal(record(&a)->state, PI_INTERP_YIELDED);
    assert_int_equal(pi_interp_yield(&pi_state, &a, 1), 0); /* already */
    /* Switching on does not take a yielded interpreter back. */
    pi_interp_rejoin_all(&pi_state);
    assert_ptr_equal(a.eval_frame, fake_default_eval);
    /* CPython did not take it after all: back in. */
    assert_int_equal(pi_interp_yield(&pi_state, &a, 0), 1);
    assert_ptr_equal(a.eval_frame, fake_our_hook);
    assert_int_equal(record(&a)->state, PI_INTERP_HOOKED);
    /* CPython took it: its function is there now, and stays. */
    assert_int_equal(pi_interp_yield(&pi_state, &a, 1), 1);
    a.eval_frame = (void *)fake_other_pep523;
    assert_int_equal(pi_interp_yield(&pi_state, &a, 0), 0);
    assert_ptr_equal(a.eval_frame, fake_other_pep523);
}

static void test_interpreters_that_differ_route_by_record(void **state)
{
    (void)state;
    struct fake_interp a = {0, NULL}, b = {1, NULL};
    pi_interp_install(&pi_state, &a);
    assert_false(attention() & PI_ATTN_MIXED);
    next_index = 5; /* another co_extra user took indices in b */
    pi_interp_install(&pi_state, &b);
    assert_true(attention() & PI_ATTN_MIXED);
    assert_int_equal(record(&b)->extra_index, 5);
    /* A new runtime (after Py_FinalizeEx): everything is forgotten. */
    pi_interp_forget_all(&pi_state);
    assert_false(attention() & PI_ATTN_MIXED);
    assert_int_equal(pi_state.nrecords, 0);
    assert_int_equal(atomic_load(&pi_state.coexist_pending), 0);
    struct fake_interp again = {0, NULL};
    pi_interp_install(&pi_state, &again);
    assert_ptr_equal(again.eval_frame, fake_our_hook);
}

static void test_a_replacement_is_noticed_once(void **state)
{
    (void)state;
    struct fake_interp a = {0, NULL};
    pi_interp_install(&pi_state, &a);
    pi_interp_notice_replacement(&pi_state, &a);
    assert_false(pi_state.replacement_reported);
    a.eval_frame = (void *)fake_other_pep523; /* a debugger put its own in front */
    pi_interp_notice_replacement(&pi_state, &a);
    assert_true(pi_state.replacement_reported);
    assert_ptr_equal(a.eval_frame, fake_other_pep523); /* not fought */
}

/* A thread state whose interpreter pointer sits where the ABI says. */
struct fake_tstate {
    void *words[64];
};

static struct fake_tstate tstate_of(void *interp)
{
    struct fake_tstate t;
    memset(&t, 0, sizeof t);
    memcpy((char *)&t + pi_state.abi.tstate_interp, &interp, sizeof interp);
    return t;
}

static void test_settled_answers_only_for_the_remembered_hooked_interpreter(void **state)
{
    (void)state;
    struct fake_interp a = {0, NULL}, b = {1, NULL};
    struct fake_tstate ta = tstate_of(&a), tb = tstate_of(&b);
    assert_false(pi_interp_settled(&pi_state, &ta)); /* nothing remembered yet */
    pi_interp_install(&pi_state, &a);
    pi_interp_remember(&pi_state, &a);
    assert_true(pi_interp_settled(&pi_state, &ta));
    assert_false(pi_interp_settled(&pi_state, &tb)); /* another interpreter: the full way */
    a.eval_frame = NULL; /* a new interpreter at a freed one's address */
    assert_false(pi_interp_settled(&pi_state, &ta));
    pi_interp_forget_all(&pi_state);
    a.eval_frame = (void *)fake_our_hook;
    assert_false(pi_interp_settled(&pi_state, &ta)); /* finalised: forgotten */
}

static void test_settled_reads_nothing_before_the_abi_is_known(void **state)
{
    (void)state;
    /* A library that stood aside (a bad setting) never learned the ABI, and
     * the audit hook still sees every event: the zeroed row's interpreter
     * offset finds NULL at the head of the thread state. */
    memset(&pi_state.abi, 0, sizeof pi_state.abi);
    struct fake_tstate t;
    memset(&t, 0, sizeof t);
    assert_false(pi_interp_settled(&pi_state, &t));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(test_install_puts_the_hook_in_front_of_the_default, setup),
        cmocka_unit_test_setup(test_install_chains_to_an_earlier_pep523_function, setup),
        cmocka_unit_test_setup(test_install_leaves_a_field_that_is_not_code, setup),
        cmocka_unit_test_setup(test_leave_and_rejoin, setup),
        cmocka_unit_test_setup(test_an_interpreter_started_switched_off_waits, setup),
        cmocka_unit_test_setup(test_yield_to_cpython_and_back, setup),
        cmocka_unit_test_setup(test_interpreters_that_differ_route_by_record, setup),
        cmocka_unit_test_setup(test_a_replacement_is_noticed_once, setup),
        cmocka_unit_test_setup(test_settled_answers_only_for_the_remembered_hooked_interpreter,
                               setup),
        cmocka_unit_test_setup(test_settled_reads_nothing_before_the_abi_is_known, setup),
    };
    return cmocka_run_group_tests_name("interp", tests, NULL, NULL);
}
