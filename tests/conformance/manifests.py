"""Manifests the corpus's cases create: small objects of the kinds the interactions act on,
and a CRD (``widgets.conformance.example.com``) with a status subresource, descriptions for
``kubectl explain``, defaults and a validation rule."""

from __future__ import annotations

from .cases import Cli, kubectl

CRD_NAME = "widgets.conformance.example.com"

CRD = """\
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.conformance.example.com}
spec:
  group: conformance.example.com
  scope: Namespaced
  names: {plural: widgets, singular: widget, kind: Widget, shortNames: [wg]}
  versions:
    - name: v1
      served: true
      storage: true
      subresources: {status: {}}
      additionalPrinterColumns:
        - {name: Size, type: integer, jsonPath: .spec.size}
      schema:
        openAPIV3Schema:
          type: object
          description: A Widget is a thing the conformance corpus makes.
          properties:
            spec:
              type: object
              description: What the widget should be.
              properties:
                size:
                  type: integer
                  description: How big the widget is.
                  minimum: 1
                  default: 1
                colour:
                  type: string
                  description: Its colour.
                  enum: [red, green, blue]
                parts:
                  type: array
                  description: Its parts, by name.
                  x-kubernetes-list-type: map
                  x-kubernetes-list-map-keys: [name]
                  items:
                    type: object
                    required: [name]
                    properties:
                      name: {type: string}
                      count: {type: integer}
              x-kubernetes-validations:
                - rule: "!has(self.colour) || self.colour != 'red' || self.size < 10"
                  message: red widgets are smaller than 10
            status:
              type: object
              properties:
                ready: {type: boolean}
"""


def crd_ready(setup: bool = True) -> tuple[Cli, Cli]:
    """The CRD applied and established (a case's setup)."""
    return (
        kubectl("apply", "--server-side", "-f", "-", stdin=CRD, setup=setup),
        kubectl(
            "wait", "--for=condition=Established", f"crd/{CRD_NAME}", "--timeout=60s", setup=setup
        ),
    )


def configmap(name: str, data: str = "{a: '1'}", labels: str | None = None) -> str:
    meta = f"{{name: {name}}}" if labels is None else f"{{name: {name}, labels: {labels}}}"
    return f"""\
apiVersion: v1
kind: ConfigMap
metadata: {meta}
data: {data}
"""


def widget(name: str, spec: str = "{size: 2}") -> str:
    return f"""\
apiVersion: conformance.example.com/v1
kind: Widget
metadata: {{name: {name}}}
spec: {spec}
"""


DEPLOYMENT = """\
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, labels: {app: web}}
spec:
  replicas: 0
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
        - {name: main, image: "busybox:1.36", command: [sleep, "3600"]}
        - {name: side, image: "busybox:1.36", command: [sleep, "3600"]}
"""

# A Job whose one pod runs until told to stop (the sim's kubelets run the command as a process).
LONG_JOB = """\
apiVersion: batch/v1
kind: Job
metadata: {name: long}
spec:
  template:
    metadata: {labels: {app: long}}
    spec:
      restartPolicy: Never
      terminationGracePeriodSeconds: 5
      containers:
        - name: main
          image: busybox
          command: [sh, -c, "trap 'exit 0' TERM; while :; do sleep 1; done"]
"""
