/* The library's lock, taken without blocking a free-threaded CPython's
 * stop-the-world (lock.h). */
#include "lock.h"

#include "state.h"

#include <pthread.h>

void pi_lock(struct pi_state *s)
{
    if (pthread_mutex_trylock(&s->lock) == 0)
        return;
    if (!s->py.free_threaded || s->py.SaveThread == NULL || s->py.ThreadStateGet == NULL ||
        s->py.ThreadStateGet() == NULL) {
        pthread_mutex_lock(&s->lock);
        return;
    }
    do {
        void *saved = s->py.SaveThread(); /* a stop-the-world may go on now */
        pthread_mutex_lock(&s->lock);
        pthread_mutex_unlock(&s->lock);
        s->py.RestoreThread(saved); /* parks here while the world is stopped */
    } while (pthread_mutex_trylock(&s->lock) != 0);
}

void pi_unlock(struct pi_state *s) { pthread_mutex_unlock(&s->lock); }
