"""Counting real elections as certified tabulators count them.

Ballots are kept *as cast* until the count (:mod:`.ballots`): every rank with the marks the
voter made there, overvotes, skipped ranks, repeated candidates and undeclared write-ins
included, distinct ballots merged with their counts. The rules of a contest
(:class:`.rules.Rules`, read from an RCTab config by :mod:`.config`) apply at count time
(:mod:`.tabulator`), so that inactive ballots can be split by cause and the rules can be
changed without reading the records again. Readers for vendor cast-vote records:
:mod:`.ess` (ES&S xlsx/csv), :mod:`.cdf` (NIST Common Data Format JSON). Round reports in
the layouts counting officers read: :mod:`.report`.
"""
