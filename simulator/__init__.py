"""creditlens's own seeded simulation of the platform's billing API (see README.md).

Never imports from pipelines/ or transforms/: it reads the spec independently, so a misreading
on either side shows up as a failing test.
"""

from simulator.clock import Clock
from simulator.core import Simulator
from simulator.faults import FAULT_KINDS, Fault, Faults
from simulator.keys import ApiKey, CompanyInfo, fingerprint
from simulator.network import Network, NetworkSpec

# Imported with the package: it fills Scenario's registry of named scenarios.
from simulator.presets import PRESETS
from simulator.scenario import (
    BreakdownMismatchSpec,
    CompanySpec,
    FaultSpec,
    HiddenMovementSpec,
    KeySpec,
    PlanSpec,
    Scenario,
    SchemaDrift,
    SubscriptionChange,
)
from simulator.server import ServerHandle, serve
from simulator.traffic import Traffic, TrafficCount
from simulator.truth import BreakdownMismatch, GroundTruth, HiddenMovement

__all__ = [
    "FAULT_KINDS",
    "PRESETS",
    "ApiKey",
    "BreakdownMismatch",
    "BreakdownMismatchSpec",
    "Clock",
    "CompanyInfo",
    "CompanySpec",
    "Fault",
    "FaultSpec",
    "Faults",
    "GroundTruth",
    "HiddenMovement",
    "HiddenMovementSpec",
    "KeySpec",
    "Network",
    "NetworkSpec",
    "PlanSpec",
    "Scenario",
    "SchemaDrift",
    "ServerHandle",
    "Simulator",
    "SubscriptionChange",
    "Traffic",
    "TrafficCount",
    "fingerprint",
    "serve",
]
