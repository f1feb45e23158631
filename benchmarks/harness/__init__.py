"""What every benchmark shares: its contenders run one way, its machine is printed one way.

``contenders`` runs the raw floor, dlt and ``creditlens sync`` as measured child processes;
``sync_result`` reads what a sync left (its lines, the warehouse) and checks it against the floor;
``machine`` says what the figures were measured on, load average included; ``targets`` prints
each figure against its bound.
"""
