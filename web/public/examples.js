// The example specs of examples/*.json, verbatim, to pre-fill the Submit editor
// (the service embeds only web/public, not examples/).
export const EXAMPLES = [
  {
    id: "digits-mlp",
    title: "digits-mlp: an MLP on 8 TPU cores",
    text: `{
  "name": "digits-mlp",
  "labels": {"example": "digits"},
  "trainer": {
    "accelerator": "tpu",
    "devices": 8,
    "precision": "bf16-true",
    "max_epochs": 20,
    "log_every_n_steps": 5,
    "checkpoint_every_n_steps": 20,
    "seed": 42
  },
  "model": {
    "layers": [
      {"type": "linear", "out": 128}, {"type": "relu"},
      {"type": "linear", "out": 10}
    ],
    "loss": "cross_entropy"
  },
  "data": {"dataset": "digits", "batch_size": 8, "val_fraction": 0.2, "shuffle": true, "drop_last": true},
  "optimizer": {"type": "adam", "lr": 0.001},
  "expect": {"val_accuracy": {"min": 0.9}},
  "timeout": "10m"
}
`,
  },
  {
    id: "iris-cpu",
    title: "iris-cpu: a small CPU job",
    text: `{
  "name": "iris-cpu",
  "trainer": {"accelerator": "cpu", "max_epochs": 30, "log_every_n_steps": 5, "seed": 1},
  "model": {
    "layers": [{"type": "linear", "out": 16}, {"type": "tanh"}, {"type": "linear", "out": 3}],
    "loss": "cross_entropy"
  },
  "data": {"dataset": "iris", "batch_size": 16, "val_fraction": 0.2},
  "optimizer": {"type": "sgd", "lr": 0.1, "momentum": 0.9, "nesterov": true},
  "expect": {"val_accuracy": {"min": 0.8}}
}
`,
  },
  {
    id: "v3-32-slice",
    title: "v3-32-slice: a pod slice of 4 hosts",
    text: `{
  "name": "blobs-v3-32",
  "labels": {"example": "pod-slice"},
  "trainer": {
    "accelerator": "tpu",
    "devices": 8,
    "num_nodes": 4,
    "precision": "bf16-true",
    "max_epochs": 5,
    "log_every_n_steps": 10,
    "seed": 7
  },
  "resources": {"accelerator_type": "v3-32"},
  "model": {
    "layers": [
      {"type": "linear", "out": 128}, {"type": "gelu"},
      {"type": "linear", "out": 4}
    ],
    "loss": "cross_entropy"
  },
  "data": {"dataset": {"synthetic": "blobs", "n": 8192, "features": 32, "classes": 4},
           "batch_size": 32, "drop_last": true},
  "optimizer": {"type": "adamw", "lr": 0.003, "weight_decay": 0.01},
  "expect": {"val_accuracy": {"min": 0.9}},
  "max_retries": 1
}
`,
  },
  {
    id: "misconfigured",
    title: "misconfigured: a GPU-box spec that TPUs reject",
    text: `{
  "name": "runs-on-my-gpu-box",
  "trainer": {
    "accelerator": "tpu",
    "devices": 3,
    "precision": "16-mixed",
    "strategy": "ddp",
    "max_epochs": 5
  },
  "model": {
    "layers": [{"type": "linear", "out": 64}, {"type": "relu"}, {"type": "linear", "out": 10}]
  },
  "data": {"dataset": "digits", "batch_size": 64}
}
`,
  },
];
