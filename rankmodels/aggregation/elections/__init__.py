"""Counting real elections as certified tabulators count them.

Ballots are kept *as cast* until the count (:mod:`.ballots`): every rank with the marks the
voter made there, overvotes, skipped ranks, repeated candidates and undeclared write-ins
included, distinct ballots merged with their counts. The rules of a contest
(:class:`.rules.Rules`, read from an RCTab config by :mod:`.config`) apply at count time
(:mod:`.tabulator`, its per-ballot work compiled in :mod:`.kernels`), so that inactive
ballots can be split by cause and the rules can be changed without reading the records
again; :mod:`.inactive` splits another count's exhausted ballots by cause the same way.
Readers for vendor cast-vote records: :mod:`.ess` (ES&S xlsx/csv), :mod:`.cdf` (NIST Common
Data Format JSON), :mod:`.dominion` (Dominion ``CvrExport*.json`` folders),
:mod:`.clear_ballot` (Clear Ballot CSV), :mod:`.hart` (Hart XML folders), :mod:`.cvr_csv`
(rank-column CSV). Round reports in the layouts counting officers read: :mod:`.report`.
"""
