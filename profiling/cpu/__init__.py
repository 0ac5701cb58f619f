"""CPU profiling: callgrind's simulated cache and branch counters with per-line costs (callgrind.py), hardware
counters where `perf stat` works (perf_stat.py), gcc's vectorisation report (vectorize.py), a static look at the
kernel's loops (loops.py), and profile_cpu (profile.py), which combines them into a Profile (diagnosed by its
caller, profiling/profile.py). Application mode (profiling/application.py) adds the same static facts to a user
function's profile (static_facts.py), compiled with the flags its binary records (compile_command.py).
"""
