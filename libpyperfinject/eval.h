/* The eval-frame functions (eval.c): the hot path. */
#ifndef PI_EVAL_H
#define PI_EVAL_H

struct pi_state;

/* The eval-frame function this build calls through (the ABI row's hook
 * kind and code-extra kind; PYPERFINJECT_PASSTHROUGH's floor). Pure. */
void *pi_eval_hook_for(const struct pi_state *s);

#endif
