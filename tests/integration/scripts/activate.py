# sys.activate_stack_trampoline while the library runs: CPython must win.
import sys
def before(): return 1
before()
sys.activate_stack_trampoline("perf")
def during(): return 2
during()
print("active", sys.is_stack_trampoline_active())
try:
    sys.activate_stack_trampoline("invalid")
except ValueError as e:
    print("ValueError", e)
sys.deactivate_stack_trampoline()
print("active", sys.is_stack_trampoline_active())
