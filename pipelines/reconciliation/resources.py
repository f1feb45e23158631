"""The reconciliation's view of the settings: sign convention, tolerance, debit types, slices."""

from __future__ import annotations

from pipelines.reconciliation.run import ReconcileOptions
from pipelines.resources.settings_resource import SettingsResource


class ReconcileResource(SettingsResource):
    def options(self, account: str) -> ReconcileOptions:
        settings = self.settings()
        slices = settings.reconcile_slice_entries
        return ReconcileOptions(
            sign_convention=settings.account_named(account).sign_convention,
            tolerance=settings.tolerance,
            debit_type_pattern=settings.debit_type_pattern,
            # Unset keeps the reconciliation's own default; 0 reads the whole ledger at once.
            **({} if slices is None else {"slice_entries": slices or None}),
        )
