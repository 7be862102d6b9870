"""Talking to a Kubernetes API server: client factory, JSON-dict REST, informers, work queue,
read-your-writes cache, leader election, events. No ComputeDomain logic.

Where things are (import modules whole: ``from computedomain.kube import rest``):

- :mod:`.client` — ``ClientConfig`` and ``connect()``: the one ``rest.Api`` per program;
- :mod:`.rest` — ``Api`` (get/list/list_all/create/update/update_status/patch/delete/watch/
  request), ``PatchType``, ``WatchEvent``; :mod:`.wire` — its encoding and decoding;
  :mod:`.stats` — its request counters;
- :mod:`.resources` — ``Resource`` and a constant per resource the project uses;
- :mod:`.errors` — ``ApiError`` and its subclasses (``NotFound``, ``Conflict``, ``Gone``...);
- :mod:`.store` — ``Store``, ``object_key``, index functions; :mod:`.informer` — ``Informer``,
  ``EventHandler``, ``EnqueueHandler``, ``is_resync``;
- :mod:`.workqueue` — ``RateLimitingQueue``, ``run_workers``; :mod:`.ratelimit` — token bucket
  and backoff; :mod:`.queuemetrics` — Prometheus metrics for queues;
- :mod:`.mutationcache` — ``MutationCache``; :mod:`.leaderelection` — ``LeaderElector``;
- :mod:`.events` — ``EventRecorder``; :mod:`.eventcorrelator` — its de-dup and spam filter.
"""
