"""coverage"""
