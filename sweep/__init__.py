"""`loopgen sweep`: hyperparameter sweeps on Optuna, each trial a rendered script in its own
run directory. space.py loads and checks the sweep file, study.py is the Optuna side, trial.py
one trial's folder and process, run.py the loop that keeps trials running, report.py what is
left for people (the table, best_spec.py, the plots); launcher.py is the process the trials
fork from, which early.py starts with the command."""
