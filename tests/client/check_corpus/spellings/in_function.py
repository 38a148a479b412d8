def main():
    import lightning as L

    return L.Trainer(accelerator="tpu", devices=3)
