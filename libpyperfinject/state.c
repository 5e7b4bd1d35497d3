/* The library's one state instance, and the one writer of its attention
 * bits (state.h). */
#include "state.h"

struct pi_state pi_state = {.lock = PTHREAD_MUTEX_INITIALIZER};

void pi_attention_raise(struct pi_state *s, int bits)
{
    atomic_fetch_or(&s->hot.attention, bits);
}

void pi_attention_lower(struct pi_state *s, int bits)
{
    atomic_fetch_and(&s->hot.attention, ~bits);
}
